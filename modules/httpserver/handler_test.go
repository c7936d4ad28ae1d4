package httpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
)

const token = "0123456789abcdefghijABCDEFGHIJ-token"

type fixture struct {
	handler      http.Handler
	shuttingDown *atomic.Bool
	restoring    *atomic.Bool
	reg          *prometheus.Registry
	logs         *observer.ObservedLogs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	a, err := auth.New(auth.SingleToken(token), log, reg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{shuttingDown: new(atomic.Bool), restoring: new(atomic.Bool), reg: reg, logs: logs}
	read := func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			httpkit.WriteError(w, err)
			return
		}
		_, _ = io.WriteString(w, "read")
	}
	f.handler, err = NewHandler(HandlerOptions{
		Routes: []httpkit.Route{
			{Method: "GET", Path: "/api/v1/ping", Public: true, Probe: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "pong") })},
			{Method: "POST", Path: "/api/v1/restore", UnlimitedBody: true, DuringRestore: true, Handler: http.HandlerFunc(read)},
			{Method: "GET", Path: "/api/v1/health", DuringShutdown: true, Probe: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "health") })},
			{Method: "POST", Path: "/api/v1/read", Handler: http.HandlerFunc(read)},
			{Method: "POST", Path: "/api/v1/panic", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })},
			{Method: "GET", Path: "/", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ui") })},
		},
		Version:        "1.2.3",
		MaxRequestSize: 8,
		ShuttingDown:   f.shuttingDown.Load,
		Restoring:      f.restoring.Load,
		Auth:           a,
		Metrics:        m,
		Log:            log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) do(method, path, authorization, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, r)
	return rec
}

func TestChain(t *testing.T) {
	bearer := "Bearer " + token
	cases := []struct {
		name                 string
		method, path, auth   string
		body                 string
		shuttingDown         bool
		restoring            bool
		status               int
		wantBody, wantHeader string
	}{
		{name: "ping", method: "GET", path: "/api/v1/ping", status: 200, wantBody: "pong"},
		{name: "ping HEAD", method: "HEAD", path: "/api/v1/ping", status: 200},
		{name: "ping wrong method", method: "POST", path: "/api/v1/ping", status: 405, wantBody: "method not allowed: use GET\n", wantHeader: "Allow: GET"},
		{name: "post route wrong method", method: "GET", path: "/api/v1/read", auth: bearer, status: 405, wantBody: "method not allowed: use POST\n", wantHeader: "Allow: POST"},
		{name: "wrong method without token is 401 first", method: "GET", path: "/api/v1/read", status: 401, wantBody: "unauthorized\n"},
		{name: "unknown api route without token", method: "GET", path: "/api/v1/nope", status: 401, wantBody: "unauthorized\n"},
		{name: "unknown api route with token", method: "GET", path: "/api/v1/nope", auth: bearer, status: 404, wantBody: "not found: unknown route\n"},
		{name: "unknown public route", method: "GET", path: "/nope", status: 404, wantBody: "not found: unknown route\n"},
		{name: "doubled slash without token: 401, no redirect", method: "POST", path: "//api/v1/read", status: 401, wantBody: "unauthorized\n"},
		{name: "doubled slash with token: 404, no redirect", method: "POST", path: "//api/v1/read", auth: bearer, status: 404, wantBody: "not found: unknown route\n"},
		{name: "body within the limit", method: "POST", path: "/api/v1/read", auth: bearer, body: "12345678", status: 200, wantBody: "read"},
		{name: "body over the limit", method: "POST", path: "/api/v1/read", auth: bearer, body: "123456789", status: 413, wantBody: "request too large: body exceeds the limit of 8 bytes\n"},
		{name: "panic", method: "POST", path: "/api/v1/panic", auth: bearer, status: 500, wantBody: "internal error: unexpected failure\n"},
		{name: "ping while shutting down", method: "GET", path: "/api/v1/ping", shuttingDown: true, status: 503, wantBody: "service unavailable: shutting down\n"},
		{name: "ui while shutting down", method: "GET", path: "/", shuttingDown: true, status: 503, wantBody: "service unavailable: shutting down\n"},
		{name: "unknown route while shutting down", method: "GET", path: "/api/v1/nope", auth: bearer, shuttingDown: true, status: 503},
		{name: "token checked before shutdown", method: "POST", path: "/api/v1/read", shuttingDown: true, status: 401, wantBody: "unauthorized\n"},
		{name: "health answers while shutting down", method: "GET", path: "/api/v1/health", auth: bearer, shuttingDown: true, status: 200, wantBody: "health"},
		{name: "ping answers during a restore", method: "GET", path: "/api/v1/ping", restoring: true, status: 200, wantBody: "pong"},
		{name: "health answers during a restore", method: "GET", path: "/api/v1/health", auth: bearer, restoring: true, status: 200, wantBody: "health"},
		{name: "other routes wait for the restore", method: "POST", path: "/api/v1/read", auth: bearer, restoring: true, status: 503, wantBody: "service unavailable: restore in progress\n", wantHeader: "Retry-After: 1"},
		{name: "unknown routes wait for the restore", method: "GET", path: "/nope", restoring: true, status: 503},
		{name: "the token comes first during a restore", method: "POST", path: "/api/v1/read", restoring: true, status: 401},
		{name: "a restore's body has no size limit", method: "POST", path: "/api/v1/restore", auth: bearer, body: "123456789", status: 200, wantBody: "read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.shuttingDown.Store(tc.shuttingDown)
			f.restoring.Store(tc.restoring)
			rec := f.do(tc.method, tc.path, tc.auth, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d (body %q)", rec.Code, tc.status, rec.Body.String())
			}
			if tc.wantBody != "" && rec.Body.String() != tc.wantBody {
				t.Fatalf("body %q, want %q", rec.Body.String(), tc.wantBody)
			}
			if tc.wantHeader != "" {
				k, v, _ := strings.Cut(tc.wantHeader, ": ")
				if rec.Header().Get(k) != v {
					t.Fatalf("header %s = %q, want %q", k, rec.Header().Get(k), v)
				}
			}
			if got := rec.Header().Get("Server"); got != "EventSourcingDB/1 eventstore/1.2.3" {
				t.Fatalf("Server header %q", got)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Fatal("no X-Content-Type-Options")
			}
			h := rec.Header()
			cached := h.Get("Cache-Control") == "no-store, no-cache, must-revalidate, proxy-revalidate" && h.Get("Expires") == "0" && h.Get("Surrogate-Control") == "no-store"
			if api := strings.HasPrefix(tc.path, "/api/"); api != cached {
				t.Fatalf("cache headers %q %q %q on %s", h.Get("Cache-Control"), h.Get("Expires"), h.Get("Surrogate-Control"), tc.path)
			}
		})
	}
}

func TestCrossOriginWriteForbidden(t *testing.T) {
	f := newFixture(t)
	rec := f.do("POST", "/api/v1/read", "Bearer "+token, "{}", "Sec-Fetch-Site", "cross-site")
	if rec.Code != 403 || rec.Body.String() != "forbidden: cross-origin request\n" || rec.Header().Get("Server") == "" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	if rec := f.do("POST", "/api/v1/read", "Bearer "+token, "{}", "Sec-Fetch-Site", "same-origin"); rec.Code != 200 {
		t.Fatalf("same-origin write: %d", rec.Code)
	}
}

func TestMetricsAndAccessLog(t *testing.T) {
	f := newFixture(t)
	f.do("GET", "/api/v1/ping?secret=query", "", "")
	f.do("GET", "/api/v1/nope/42", "Bearer "+token, "")
	f.do("POST", "/api/v1/panic", "Bearer "+token, "")
	want := `
# HELP eventstore_http_requests_total HTTP requests by route template, method and status code.
# TYPE eventstore_http_requests_total counter
eventstore_http_requests_total{code="200",method="GET",route="/api/v1/ping"} 1
eventstore_http_requests_total{code="404",method="GET",route="none"} 1
eventstore_http_requests_total{code="500",method="POST",route="/api/v1/panic"} 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want), "eventstore_http_requests_total"); err != nil {
		t.Fatal(err)
	}
	lines := f.logs.FilterMessage("request").All()
	if len(lines) != 3 {
		t.Fatalf("want 3 access lines, got %d", len(lines))
	}
	first := lines[0].ContextMap()
	if first["path"] != "/api/v1/ping" || first["route"] != "/api/v1/ping" || first["status"] != int64(200) || first["bytes"] != int64(4) {
		t.Fatalf("access line: %v", first)
	}
	if panics := f.logs.FilterMessage("request panicked").All(); len(panics) != 1 || panics[0].Level != zapcore.ErrorLevel {
		t.Fatalf("panic not logged at ERROR once: %v", panics)
	}
	for _, e := range f.logs.All() {
		for k, v := range e.ContextMap() {
			if s, _ := v.(string); strings.Contains(s, "secret") || strings.Contains(s, token) {
				t.Fatalf("log field %s leaks %q", k, s)
			}
		}
	}
}

func TestDuplicateRoute(t *testing.T) {
	h := http.NotFoundHandler()
	never := func() bool { return false }
	_, err := newRouter([]httpkit.Route{{Method: "GET", Path: "/a", Handler: h}, {Method: "POST", Path: "/a", Handler: h}}, never, never,
		func(_ string, h http.Handler) http.Handler { return h })
	if err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("duplicate route: %v", err)
	}
}
