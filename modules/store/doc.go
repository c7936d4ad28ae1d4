// Package store is the storage engine: an append-only log of events in one
// global, gap-free order, chained by SHA-256 hashes, on a durable Backend.
//
// Guarantees:
//   - One writer goroutine owns ids, times, hashes and preconditions. It
//     takes every write waiting in its queue, checks each request in order
//     against the committed events plus the earlier requests of the group,
//     and commits the accepted ones as one atomic, synced backend write
//     (group commit).
//   - A write is acknowledged only after the write that holds it is synced,
//     and readers see an event only then: every read is bounded by the
//     durable head, which advances after the sync returns.
//   - Any storage error, while a group is checked or committed, is
//     fail-stop: every request of that group and all later ones fail with
//     the same *FailureError until restart, nothing of the group is
//     committed or acknowledged; reads of durable data go on.
//   - Ids are contiguous in commit order; times strictly increase, also
//     across restarts; the hash chain is unbroken.
//   - The queue is bounded: when it is full, writers wait (or give up with
//     their context); nothing is dropped.
//
// The store knows nothing of the service around it: it reports the
// writer's timings to a Recorder and answers Durable, Writable and Size,
// which the service turns into metrics and health checks (package storage).
package store
