package eventapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// subscriptionMetrics shows the subscriptions' figures at each scrape:
// their lag (which reads the log from the lowest position on), consumers,
// deliveries in flight and parked events, and what became of their
// deliveries since the process started.
type subscriptionMetrics struct {
	m                                *subscriptions.Manager
	lag, consumers, inFlight, parked *prometheus.Desc
	deliveries                       *prometheus.Desc
}

func newSubscriptionMetrics(m *subscriptions.Manager) *subscriptionMetrics {
	label := []string{"subscription"}
	return &subscriptionMetrics{
		m:         m,
		lag:       prometheus.NewDesc("eventstore_subscription_lag_events", "Matching events after the positions of a subscription, not in flight.", label, nil),
		consumers: prometheus.NewDesc("eventstore_subscription_consumers", "Connected consumers of a subscription.", label, nil),
		inFlight:  prometheus.NewDesc("eventstore_subscription_in_flight", "Deliveries of a subscription sent and not settled.", label, nil),
		parked:    prometheus.NewDesc("eventstore_subscription_parked", "Parked events of a subscription.", label, nil),
		deliveries: prometheus.NewDesc("eventstore_subscription_deliveries_total", "Deliveries of a subscription by outcome since the start.",
			[]string{"subscription", "outcome"}, nil),
	}
}

// Describe sends the descriptions of the metrics.
func (s *subscriptionMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.lag, s.consumers, s.inFlight, s.parked, s.deliveries} {
		ch <- d
	}
}

// Collect sends the figures of every subscription; one that cannot be read
// now is left out of this scrape.
func (s *subscriptionMetrics) Collect(ch chan<- prometheus.Metric) {
	counts, err := s.m.Counts()
	if err != nil {
		return
	}
	for _, c := range counts {
		if lag, err := s.m.Lag(c.Name); err == nil {
			ch <- prometheus.MustNewConstMetric(s.lag, prometheus.GaugeValue, float64(lag), c.Name)
		}
		ch <- prometheus.MustNewConstMetric(s.consumers, prometheus.GaugeValue, float64(c.Consumers), c.Name)
		ch <- prometheus.MustNewConstMetric(s.inFlight, prometheus.GaugeValue, float64(c.InFlight), c.Name)
		ch <- prometheus.MustNewConstMetric(s.parked, prometheus.GaugeValue, float64(c.Parked), c.Name)
		o := c.Outcomes
		for _, out := range []struct {
			name  string
			value uint64
		}{{"acknowledged", o.Acknowledged}, {"retried", o.Retried}, {"timed_out", o.TimedOut}, {"parked", o.Parked}, {"stale", o.Stale}} {
			ch <- prometheus.MustNewConstMetric(s.deliveries, prometheus.CounterValue, float64(out.value), c.Name, out.name)
		}
	}
}

// registerSubscriptionMetrics registers the subscriptions' metrics (on
// both backends; none when the service has no subscription manager). The
// health route shows a token only the series it may read (docs/api.md
// §1.2a).
func registerSubscriptionMetrics(reg prometheus.Registerer, m *subscriptions.Manager) error {
	if m == nil {
		return nil
	}
	return reg.Register(newSubscriptionMetrics(m))
}
