package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/eventstore-service/eventstore/modules/config"
)

// NewRegistry returns a registry with the Go and process collectors and
// eventstore_build_info.
func NewRegistry(build config.Build) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "eventstore_build_info",
		Help:        "Build metadata of the running binary; always 1.",
		ConstLabels: prometheus.Labels{"version": build.Version, "revision": build.Revision, "goversion": build.GoVersion},
	})
	info.Set(1)
	if err := Register(reg, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), info); err != nil {
		return nil, err
	}
	return reg, nil
}

// Register registers every collector on reg and returns the first error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// HTTP records every HTTP request by route template, method and status,
// and the client connections.
type HTTP struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	connections prometheus.Gauge
	refused     prometheus.Counter
	evicted     prometheus.Counter
}

// NewHTTP registers the HTTP request metrics on reg.
func NewHTTP(reg prometheus.Registerer) (*HTTP, error) {
	m := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventstore_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventstore_http_request_duration_seconds",
			Help:    "Time until the response ended (for streams: the whole stream), by route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_http_connections",
			Help: "Open client connections on all listeners.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventstore_http_connections_refused_total",
			Help: "Connections refused at --max-connections (and its reserve for ping and health), none of the open ones waiting for a request.",
		}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventstore_http_connections_evicted_total",
			Help: "Connections closed at --max-connections to make room for a new one, the one that had waited longest for a request.",
		}),
	}
	if err := Register(reg, m.requests, m.duration, m.connections, m.refused, m.evicted); err != nil {
		return nil, err
	}
	return m, nil
}

// ConnectionOpened counts an admitted connection.
func (m *HTTP) ConnectionOpened() { m.connections.Inc() }

// ConnectionClosed counts a closed connection.
func (m *HTTP) ConnectionClosed() { m.connections.Dec() }

// ConnectionRefused counts a connection refused for want of room.
func (m *HTTP) ConnectionRefused() { m.refused.Inc() }

// ConnectionEvicted counts a waiting connection closed to make room.
func (m *HTTP) ConnectionEvicted() { m.evicted.Inc() }

// Observe records one finished request.
func (m *HTTP) Observe(route, method string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}
