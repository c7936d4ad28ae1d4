package httpserver

import (
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/tracing"
)

// WriteTimeout is the time a response has to reach the client; streams
// renew the write deadline per line.
const WriteTimeout = 60 * time.Second

// The cache headers of every /api/ response (docs/api.md §1.3), shared and
// never modified.
var (
	cacheControl     = []string{"no-store, no-cache, must-revalidate, proxy-revalidate"}
	expires          = []string{"0"}
	surrogateControl = []string{"no-store"}
)

// headers sets the headers every response carries, errors and UI assets included.
func headers(serverHeader string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Server", serverHeader)
		h.Set("X-Content-Type-Options", "nosniff")
		if strings.HasPrefix(r.URL.Path, "/api/") {
			h["Cache-Control"] = cacheControl
			h["Expires"] = expires
			h["Surrogate-Control"] = surrogateControl
		}
		if r.TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// observe records the route template in the request context, turns a panic
// into 500, and after the response logs the DEBUG access line and feeds the
// HTTP metrics; with tracing on, the request has its span. Query strings,
// headers and bodies are never logged.
func observe(route string, m *metrics.HTTP, log *zap.Logger, tr *tracing.Tracing, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, span := tr.StartRequest(httpkit.WithRoute(r.Context(), route), route, r)
		r = r.WithContext(ctx)
		rec := &httpkit.Recorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("request panicked", zap.Any("panic", p), zap.String("route", route), zap.String("method", r.Method))
				if !rec.WroteHeader {
					httpkit.WriteError(rec, httpkit.ErrUnexpected)
				}
			}
			status := rec.Status
			if !rec.WroteHeader {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			m.Observe(route, r.Method, status, elapsed)
			if span != nil {
				tracing.EndRequest(span, status)
			}
			if line := log.Check(zap.DebugLevel, "request"); line != nil { // no fields to build below DEBUG
				line.Write(
					zap.String("method", r.Method),
					zap.String("route", route),
					zap.String("path", r.URL.Path),
					zap.Int("status", status),
					zap.Float64("durationSeconds", elapsed.Seconds()),
					zap.Int64("bytes", rec.Bytes),
					zap.String("remoteAddr", r.RemoteAddr))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// limits caps the request body at maxBody bytes (413 when a handler reads
// past it), reads it within its time limits (408 when it stalls or takes
// too long; cut off at the stop phase, tracked in bs), and sets the write
// deadline of the response; the paths in unlimited (a restore's streamed
// backup) have no size limit, no total time limit and no write deadline.
func limits(maxBody int64, times BodyTimes, unlimited map[string]bool, bs *bodies, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		rc := http.NewResponseController(w)
		restore := unlimited[r.URL.Path]
		if r.ContentLength != 0 { // a body was announced
			t := times
			if restore {
				t.Total = 0
			}
			body := newTimedBody(r, rc, t, now)
			bs.add(body)
			defer bs.remove(body)
			r.Body = body
		}
		if !restore {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			_ = rc.SetWriteDeadline(now.Add(WriteTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// crossOrigin rejects cross-origin browser writes with 403.
func crossOrigin(next http.Handler) http.Handler {
	protection := http.NewCrossOriginProtection()
	protection.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpkit.WriteError(w, httpkit.Errorf(http.StatusForbidden, "forbidden: cross-origin request"))
	}))
	return protection.Handler(next)
}
