// Package pgtest starts throw-away PostgreSQL clusters for tests: Debian's
// PostgreSQL 15 binaries (initdb, pg_ctl) run as the postgres system user
// (PostgreSQL refuses to run as root), with the data directory in a new
// temporary directory, a free loopback port, fsync on and trust
// authentication on 127.0.0.1 only.
//
// Guarantees: a Cluster answers on its URL when NewCluster returns; Remove
// stops it at once (pg_ctl stop -m immediate) and deletes its directory; a
// watchdog process does the same if the test process dies without calling
// Remove, so a killed test leaves no server behind. New and Shared skip the
// test, with a message saying what to install, when the binaries are
// missing. NewStandby adds a synchronous streaming standby to a cluster,
// and Promote makes it the primary, for failover tests. Pause stops every
// process of a cluster with SIGSTOP (it answers nothing and keeps its
// connections open, as behind a black-holed network) and Resume continues
// them; Remove and the watchdog continue a paused cluster before they stop
// it. The unit tests of the storage engine and the end-to-end tests use
// it alike.
package pgtest
