// Package httpkit holds the HTTP vocabulary shared by the modules that serve
// routes: the Route a module contributes, the request's route template, and
// the one writer of error and JSON responses. It has no fx wiring and no
// state.
package httpkit
