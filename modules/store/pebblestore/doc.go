// Package pebblestore is the embedded storage backend of the store, on
// Pebble. Each commit is one atomic Pebble batch written with Sync: the event
// records, their index entries and the head together. Reads are Pebble
// iterators over the index that serves them, so memory stays flat whatever
// the size of the result.
package pebblestore
