// Package opsapi serves the operations endpoints of the HTTP API (docs/api.md
// §4.13): putting the service into read-only mode, the online verification
// of the store (a stream among those --max-streams bounds) and the
// diagnostics report (secrets never in it). Like the event
// endpoints, its handlers only translate between HTTP and the store.
package opsapi
