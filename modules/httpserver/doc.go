// Package httpserver serves the routes that modules contribute, on the plain
// HTTP and the HTTPS listener. Every request passes the same chain, outermost
// first: common headers (Server on every response), observation (route
// template, panic recovery, access log, metrics), the token check, body and
// time limits, cross-origin protection, and the router (shutdown gate, method
// check, 404).
package httpserver
