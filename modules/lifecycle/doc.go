// Package lifecycle holds the process state machine (starting → running →
// shutting down → stopped), the signal watcher that drives it, and the
// liveness endpoint ping that reports it.
//
// Shutdown has two parts: the drain period, in which the listeners still
// accept connections but ping, health and new requests answer 503, and the
// stop phase, in which listeners close, open streams end and storage closes.
// A second SIGINT or SIGTERM during shutdown forces exit 130 at once.
package lifecycle
