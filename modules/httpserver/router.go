package httpserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// router matches paths with gorilla/mux, once per request, and hands the
// request to the chain of its route (see NewHandler). Per route it checks
// the state of the service, the connection and the method, so that every
// route (and the 404 answer) behaves the same way: 503 while shutting down
// or while a restore runs, unless the route opts out, 503 on a connection of
// the probes' reserve but for ping and health, 405 with an Allow header for
// a wrong method. These answers come before the body is read: the body is
// not awaited (httpkit.RefuseBody).
type router struct {
	mux                     *mux.Router
	shuttingDown, restoring func() bool
}

// newRouter routes each path to chain(template, the route's handler), and
// every other path to chain(httpkit.Unmatched, the 404 handler).
func newRouter(routes []httpkit.Route, shuttingDown, restoring func() bool, chain func(template string, h http.Handler) http.Handler) (*router, error) {
	// Paths are matched as sent: no redirect to a cleaned path, which would
	// answer an unauthenticated //api/... with a 301 instead of 401.
	rt := &router{mux: mux.NewRouter().SkipClean(true), shuttingDown: shuttingDown, restoring: restoring}
	seen := make(map[string]bool, len(routes))
	for _, route := range routes {
		if seen[route.Path] {
			return nil, fmt.Errorf("route %s registered twice", route.Path)
		}
		seen[route.Path] = true
		rt.mux.Handle(route.Path, chain(route.Path, rt.serve(route)))
	}
	rt.mux.NotFoundHandler = chain(httpkit.Unmatched, rt.gate(httpkit.Route{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpkit.RefuseBody(w, r, httpkit.ErrUnknownRoute)
	})))
	return rt, nil
}

// ServeHTTP matches r and serves it with its route's chain. Match always
// yields a handler: the routes have no method matchers, and the 404 chain
// is the NotFoundHandler.
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m mux.RouteMatch
	rt.mux.Match(r, &m)
	m.Handler.ServeHTTP(w, r)
}

func (rt *router) serve(route httpkit.Route) http.Handler {
	return rt.gate(route, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !answers(route, r.Method) {
			allow := strings.Join(append([]string{route.Method}, route.MoreMethods...), ", ")
			w.Header().Set("Allow", allow)
			httpkit.RefuseBody(w, r, httpkit.Errorf(http.StatusMethodNotAllowed, "method not allowed: use %s", allow))
			return
		}
		route.Handler.ServeHTTP(w, r)
	}))
}

// answers reports whether route answers method: its methods, and HEAD
// where it answers GET.
func answers(route httpkit.Route, method string) bool {
	has := func(m string) bool { return route.Method == m || slices.Contains(route.MoreMethods, m) }
	return has(method) || method == http.MethodHead && has(http.MethodGet)
}

// gate answers 503 while the service shuts down or a restore runs, unless
// route opts out, and on a connection of the probes' reserve unless route
// is a probe.
func (rt *router) gate(route httpkit.Route, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !route.DuringShutdown && rt.shuttingDown():
			httpkit.RefuseBody(w, r, httpkit.ErrShuttingDown)
		case !route.Probe && !route.DuringRestore && rt.restoring():
			httpkit.RefuseBody(w, r, httpkit.ErrRestoring)
		case !route.Probe && probeOnly(r):
			httpkit.RefuseBody(w, r, httpkit.ErrTooManyConnections)
		default:
			next.ServeHTTP(w, r)
		}
	})
}
