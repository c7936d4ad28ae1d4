// Package storage runs the storage engine inside the service on the
// backend --storage-backend chooses: Pebble in the data directory (checking
// the directory's format version, migrating an older one and refusing a
// newer one; the store starts after the directory and closes before it),
// or PostgreSQL shared with other nodes (no data directory; the service id
// lives in the database, the URL is never logged, only hosts and
// database). It turns what the store knows (writable, size, events, head,
// commit timings) and the PostgreSQL pool's figures into health checks and
// metrics. The engine itself, package store, knows nothing of the service
// around it.
package storage
