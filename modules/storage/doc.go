// Package storage runs the storage engine inside the service: it opens the
// backend in the data directory (checking the directory's format version,
// migrating an older one and refusing a newer one), starts the store after
// the data directory and closes it before, and turns what the store knows
// (writable, size, events, head, commit timings) into health checks and
// metrics. The engine itself, package store, knows nothing of the service
// around it.
package storage
