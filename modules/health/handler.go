package health

import (
	"encoding/json"
	"net/http"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
)

// Path is the path of the health endpoint.
const Path = "/api/v1/health"

// NewRoute returns GET /api/v1/health: the health report, or the metrics
// with format=openmetrics (or a scrape's Accept header). It answers during
// shutdown too, with status fail and 503.
func NewRoute(reporter *Reporter, exposition *metrics.Exposition) httpkit.Route {
	return httpkit.Route{
		Method:         http.MethodGet,
		Path:           Path,
		DuringShutdown: true,
		Probe:          true,
		Permission:     httpkit.PermitAnyToken,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch format := r.URL.Query().Get("format"); {
			case format == "openmetrics":
				exposition.ServeOpenMetrics(w, r, hiddenFrom(r))
			case format == "" && metrics.IsScrape(r):
				exposition.ServeNegotiated(w, r, hiddenFrom(r))
			case format == "" || format == "rfc":
				writeReport(w, reporter.Report(r.Context()))
			default:
				httpkit.WriteError(w, httpkit.Errorf(http.StatusBadRequest,
					"invalid request: unknown format '%s', expected 'rfc' or 'openmetrics'", format))
			}
		}),
	}
}

// hiddenFrom returns the series the metrics leave out for the token of r:
// those of the subscriptions whose figures it may not read (docs/api.md
// §1.2a).
func hiddenFrom(r *http.Request) metrics.Hide {
	g := auth.GrantsOf(r.Context())
	if g.CanSeeSubscriptionMetrics("*") {
		return metrics.Hide{}
	}
	return metrics.Hide{Label: "subscription", Shown: g.CanSeeSubscriptionMetrics}
}

func writeReport(w http.ResponseWriter, report Report) {
	body, err := json.Marshal(report)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/health+json")
	w.WriteHeader(report.Status.HTTPStatus())
	_, _ = w.Write(append(body, '\n'))
}
