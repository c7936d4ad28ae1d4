package eventapi

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// admission bounds the requests of one kind that run at once (open
// streams, running queries). A request past the bound is refused before
// any work, with 503 and Retry-After; nothing already running is disturbed.
type admission struct {
	running atomic.Int64
	max     int64
	refusal *httpkit.Error
	gauge   prometheus.Gauge // the admitted requests running
}

func newAdmission(max int, what string, gauge prometheus.Gauge) *admission {
	return &admission{
		max:     int64(max),
		refusal: &httpkit.Error{Status: http.StatusServiceUnavailable, Message: "service unavailable: too many " + what, RetryAfter: 1},
		gauge:   gauge,
	}
}

// admit serves h for the requests it admits and refuses the others.
func (a *admission) admit(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer a.running.Add(-1)
		if a.running.Add(1) > a.max {
			httpkit.WriteError(w, a.refusal)
			return
		}
		a.gauge.Inc()
		defer a.gauge.Dec()
		h(w, r)
	})
}
