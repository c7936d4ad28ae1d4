// Package backup writes and reads the backup format of docs/api.md §4.13: one
// NDJSON line per event (its members in the backup's order, data as the
// canonical bytes it was hashed over, the hash beside the event), then one
// line per schema. Tools of the EventSourcingDB ecosystem read these lines,
// so they are wire-exact.
//
// A Reader proves every line as it reads it: ids contiguous from 0, each
// predecessorhash the hash before it, the hash recomputed from the line,
// times strictly increasing, and the validation rules of write-events. It
// yields the events as the store keeps them, ready for restore.Into (package store/restore).
package backup
