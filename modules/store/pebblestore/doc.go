// Package pebblestore is the embedded storage backend of the store, on
// Pebble. Each commit is one atomic Pebble batch written with Sync: the event
// records, their index entries and the head together. Reads are Pebble
// iterators over the index that serves them, so memory stays flat whatever
// the size of the result.
//
// The stores have a format version (FormatVersion): Open refuses a newer one,
// migrates an older one step by step, and pins Pebble's format major version
// to the store's, so that a new Pebble never moves the files by itself.
// Pebble's log goes to zap, its repeated errors rate-limited; an error Pebble
// cannot go on after is the error of Open, Commit or Close when it happens in
// them, and otherwise (a flush or compaction) a FATAL log line and exit 1.
package pebblestore
