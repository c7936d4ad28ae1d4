package store

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventstore-service/eventstore/modules/metrics"
)

// syncBuckets are the buckets of the write and sync duration histograms.
var syncBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// Metrics are the storage engine's Prometheus metrics.
type Metrics struct {
	eventsWritten prometheus.Counter
	writeDuration prometheus.Histogram
	syncDuration  prometheus.Histogram
	writable      prometheus.Gauge
	events        prometheus.Gauge
	headID        prometheus.Gauge
}

// NewMetrics registers the storage metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		eventsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventstore_events_written_total", Help: "Events committed."}),
		writeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "eventstore_write_duration_seconds", Help: "Time from queueing a write at the writer to its acknowledgement.", Buckets: syncBuckets}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "eventstore_storage_sync_duration_seconds", Help: "Duration of each synced group commit.", Buckets: syncBuckets}),
		writable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_storage_writable", Help: "1 while the store accepts writes, 0 after a failure or while shutting down."}),
		events: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_storage_events", Help: "Number of durable events."}),
		headID: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_storage_head_id", Help: "Id of the last durable event, -1 when the store is empty."}),
	}
	if err := metrics.Register(reg, m.eventsWritten, m.writeDuration, m.syncDuration, m.writable, m.events, m.headID); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) observeHead(count uint64) {
	m.events.Set(float64(count))
	m.headID.Set(float64(count) - 1)
}
