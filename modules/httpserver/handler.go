package httpserver

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/download"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/tracing"
)

// ServerHeader returns the Server header value for a build version; the
// EventSourcingDB client SDKs require the prefix "EventSourcingDB/".
func ServerHeader(version string) string {
	return "EventSourcingDB/1 eventstore/" + version
}

// HandlerOptions are the parts of the request chain.
type HandlerOptions struct {
	// Routes are all contributed routes.
	Routes []httpkit.Route
	// Version goes into the Server header.
	Version string
	// MaxRequestSize caps request bodies.
	MaxRequestSize int64
	// BodyTimes limit the time request bodies take.
	BodyTimes BodyTimes
	// Stopping is done when the stop phase begins: the bodies still being
	// read are cut off then (after httpkit.StopGrace).
	Stopping context.Context
	// ShuttingDown and Restoring tell the router to answer 503.
	ShuttingDown, Restoring func() bool
	// Auth checks the token.
	Auth *auth.Authenticator
	// Metrics records requests.
	Metrics *metrics.HTTP
	// Log receives the access lines and panics.
	Log *zap.Logger
	// Tracing, unless nil, gives every request a span.
	Tracing *tracing.Tracing
	// Downloads keeps the download tickets of the routes that have
	// downloads (Route.Download); nil gives the handler its own.
	Downloads *download.Registry
}

// NewHandler returns the handler of both listeners: the common headers,
// then the route matched once, then the route's chain: observation (route
// template, panics, access log, metrics), the token and permission check
// (the route's Permission; a path of no route needs any token; a guarded
// route needs it outside /api/ too), body and time
// limits, cross-origin protection, the service state and method checks,
// and the route's handler. The download routes join the routes when one of
// them has downloads (downloads.go).
func NewHandler(opts HandlerOptions) (http.Handler, error) {
	restoring := opts.Restoring
	if restoring == nil {
		restoring = func() bool { return false }
	}
	dl := newDownloads(opts.Downloads, opts.Routes)
	routes := append(opts.Routes[:len(opts.Routes):len(opts.Routes)], dl.routes()...)
	unlimited := map[string]bool{}
	perms := map[string]httpkit.Permission{httpkit.Unmatched: httpkit.PermitAnyToken}
	guarded := map[string]bool{}
	var public []string
	for _, route := range routes {
		perms[route.Path] = route.Permission
		guarded[route.Path] = route.Guarded
		if route.UnlimitedBody {
			unlimited[route.Path] = true
		}
		if route.Public {
			public = append(public, route.Path)
		}
	}
	bs := newBodies()
	if opts.Stopping != nil {
		context.AfterFunc(opts.Stopping, func() { bs.cutAll(time.Now().Add(httpkit.StopGrace)) })
	}
	chain := func(template string, h http.Handler) http.Handler {
		h = crossOrigin(h)
		h = limits(opts.MaxRequestSize, opts.BodyTimes, unlimited, bs, h)
		if guarded[template] {
			h = opts.Auth.Require(h, perms[template])
		} else {
			h = opts.Auth.Middleware(h, perms[template], public...)
		}
		return observe(template, opts.Metrics, opts.Log, opts.Tracing, h)
	}
	rt, err := newRouter(routes, opts.ShuttingDown, restoring, chain)
	if err != nil {
		return nil, err
	}
	dl.dispatch = rt
	return headers(ServerHeader(opts.Version), rt), nil
}
