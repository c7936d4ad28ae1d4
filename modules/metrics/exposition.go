package metrics

import (
	"mime"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// openMetricsAccept is the Accept header that forces OpenMetrics 1.0.0.
const openMetricsAccept = "application/openmetrics-text; version=1.0.0; charset=utf-8"

// Exposition serves a registry's metrics in the Prometheus text formats.
type Exposition struct {
	handler http.Handler
}

// NewExposition returns an Exposition of g.
func NewExposition(g prometheus.Gatherer) *Exposition {
	return &Exposition{handler: promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})}
}

// ServeOpenMetrics writes the metrics as OpenMetrics 1.0.0 text ending in
// "# EOF", whatever the request's Accept header says.
func (e *Exposition) ServeOpenMetrics(w http.ResponseWriter, r *http.Request) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", openMetricsAccept)
	e.handler.ServeHTTP(w, r)
}

// ServeNegotiated writes the metrics in the format the Accept header asks for.
func (e *Exposition) ServeNegotiated(w http.ResponseWriter, r *http.Request) {
	e.handler.ServeHTTP(w, r)
}

// IsScrape reports whether the Accept header names a metrics format, as a
// Prometheus scrape does: application/openmetrics-text, or text/plain with a
// version parameter.
func IsScrape(r *http.Request) bool {
	for _, accept := range r.Header.Values("Accept") {
		for _, part := range strings.Split(accept, ",") {
			mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if mediaType == "application/openmetrics-text" {
				return true
			}
			if _, versioned := params["version"]; mediaType == "text/plain" && versioned {
				return true
			}
		}
	}
	return false
}
