package metrics

import (
	"mime"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// openMetricsAccept is the Accept header that forces OpenMetrics 1.0.0.
const openMetricsAccept = "application/openmetrics-text; version=1.0.0; charset=utf-8"

// Exposition serves a registry's metrics in the Prometheus text formats.
type Exposition struct {
	gatherer prometheus.Gatherer
	handler  http.Handler
}

// NewExposition returns an Exposition of g.
func NewExposition(g prometheus.Gatherer) *Exposition {
	return &Exposition{gatherer: g, handler: handlerOf(g)}
}

func handlerOf(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Hide names the series an answer leaves out: those whose label Label has
// a value that Shown refuses. The zero Hide leaves out nothing.
type Hide struct {
	Label string
	Shown func(value string) bool
}

// ServeOpenMetrics writes the metrics as OpenMetrics 1.0.0 text ending in
// "# EOF", whatever the request's Accept header says, less those hide
// names.
func (e *Exposition) ServeOpenMetrics(w http.ResponseWriter, r *http.Request, hide Hide) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", openMetricsAccept)
	e.ServeNegotiated(w, r, hide)
}

// ServeNegotiated writes the metrics in the format the Accept header asks
// for, less those hide names.
func (e *Exposition) ServeNegotiated(w http.ResponseWriter, r *http.Request, hide Hide) {
	if hide.Shown == nil {
		e.handler.ServeHTTP(w, r)
		return
	}
	handlerOf(hidden{e.gatherer, hide}).ServeHTTP(w, r)
}

// hidden gathers g's metrics less the series hide names, and less the
// families left without a series.
type hidden struct {
	g    prometheus.Gatherer
	hide Hide
}

// Gather implements prometheus.Gatherer.
func (h hidden) Gather() ([]*dto.MetricFamily, error) {
	families, err := h.g.Gather()
	kept := families[:0]
	for _, f := range families {
		series := f.Metric[:0]
		for _, m := range f.Metric {
			if h.shown(m) {
				series = append(series, m)
			}
		}
		if f.Metric = series; len(series) > 0 {
			kept = append(kept, f)
		}
	}
	return kept, err
}

func (h hidden) shown(m *dto.Metric) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == h.hide.Label {
			return h.hide.Shown(l.GetValue())
		}
	}
	return true
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
