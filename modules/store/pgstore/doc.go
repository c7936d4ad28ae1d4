// Package pgstore is the shared storage backend of the store, on
// PostgreSQL (pgx): any number of stores (nodes) write one database, and
// every one of them reads what any of them committed.
//
// Guarantees:
//   - One global order without gaps: a commit locks the one row of the head
//     table for its whole transaction and takes its ids from it, never from
//     a sequence, so commits of all nodes are serialized and a reader never
//     sees id n+1 before n.
//   - A commit returns only after PostgreSQL committed with
//     synchronous_commit at least on (set on every session); a server with
//     fsync off is refused.
//   - A commit whose connection breaks on the way is looked up before it
//     answers (after waiting for the head's lock, so that the transaction
//     has ended): nil if it committed, store.ErrUnavailable if it did not;
//     never a guess.
//   - Every error that means the database cannot serve now (connection
//     lost or refused, shutdown, a read-only standby, timeouts) wraps
//     store.ErrUnavailable; the pool reconnects by itself, and a URL with
//     several hosts and target_session_attrs=read-write follows a failover.
//   - A database that stops answering without closing its connections
//     (processes paused, a network that drops packets) is found within
//     1.25 s: a watchdog on a connection of its own sends an empty
//     statement every 250 ms, each bounded by 1 s. Until one is answered,
//     Waiting reports true (the store refuses writes at once and reports
//     itself unreachable), Begin fails at once, and every round trip in
//     flight ends, all with store.ErrUnavailable; a commit whose COMMIT may
//     have reached the server is looked up as above. Once a probe is
//     answered, the backend serves again by itself. A probe that fails at
//     once (a refused connection) changes nothing: such a failure reaches
//     every round trip as fast. The watchdog adds no round trip to a
//     commit.
//   - Reads go page by page, each page one statement read completely, so
//     memory stays flat and no connection waits for a slow reader.
//   - Other nodes' commits are announced by NOTIFY on a dedicated LISTEN
//     connection (Changes); the store polls as well.
//   - The schema (eventstore) is created and migrated at Open under an
//     advisory lock and versioned (SchemaVersion); a newer one is refused.
package pgstore
