package httpserver

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
)

// BenchmarkChain measures what the chain adds to a request (headers,
// routing among 30 routes, observation, token, limits, cross-origin
// check, gate): the handler itself only writes two bytes.
func BenchmarkChain(b *testing.B) {
	reg := prometheus.NewRegistry()
	a, err := auth.New(auth.SingleToken(token), zap.NewNop(), reg)
	if err != nil {
		b.Fatal(err)
	}
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		b.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	var routes []httpkit.Route
	for i := range 30 {
		routes = append(routes, httpkit.Route{Method: "POST", Path: fmt.Sprintf("/api/v1/route-%d", i), Handler: ok})
	}
	h, err := NewHandler(HandlerOptions{Routes: routes, Version: "1", MaxRequestSize: 1 << 20,
		ShuttingDown: func() bool { return false }, Auth: a, Metrics: m, Log: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/api/v1/route-20", strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
