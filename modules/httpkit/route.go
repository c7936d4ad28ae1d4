package httpkit

import (
	"context"
	"net/http"
)

// Route is one endpoint a module contributes to the HTTP server.
type Route struct {
	// Method is the only method the route answers (GET routes answer HEAD too);
	// other methods get 405 with an Allow header.
	Method string
	// Path is the exact path, also the route's label in metrics and logs.
	Path string
	// Handler serves the route.
	Handler http.Handler
	// Public routes under /api/ answer without the token (ping); every
	// other route there requires it.
	Public bool
	// Probe marks ping and health: they answer while a restore runs and on
	// the connections of the reserve beyond --max-connections.
	Probe bool
	// DuringRestore lets the handler answer while a restore runs (the
	// restore itself, and the probes); the server answers 503 for every
	// other route then.
	DuringRestore bool
	// UnlimitedBody exempts the body from the request size limit, the
	// total time limit of bodies and the response's write deadline (a
	// restore's backup, streamed); the idle limit between its bytes holds.
	UnlimitedBody bool
	// DuringShutdown lets the handler answer while the service shuts down;
	// the server answers 503 for every other route then.
	DuringShutdown bool
}

// Unmatched is the route label of requests that match no route.
const Unmatched = "none"

type routeKey struct{}

// WithRoute returns a context that records the route template of a request.
func WithRoute(ctx context.Context, template string) context.Context {
	return context.WithValue(ctx, routeKey{}, template)
}

// RouteOf returns the route template recorded for r, or Unmatched.
func RouteOf(r *http.Request) string {
	if t, ok := r.Context().Value(routeKey{}).(string); ok {
		return t
	}
	return Unmatched
}
