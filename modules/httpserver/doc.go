// Package httpserver serves the routes that modules contribute, on the plain
// HTTP and the HTTPS listener. Every request passes the same chain, outermost
// first: common headers (Server on every response), the router (gorilla/mux,
// matched once), then its route's chain: observation (route template, panic
// recovery, access log, metrics), the token check, body and time limits,
// cross-origin protection, the shutdown and restore gate and the method check
// (or the 404 answer).
package httpserver
