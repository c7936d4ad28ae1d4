package storage

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/store"
)

// syncBuckets are the buckets of the write and sync duration histograms.
var syncBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// Metrics are the storage metrics fed by the writer; they implement
// store.Recorder.
type Metrics struct {
	eventsWritten prometheus.Counter
	writeDuration prometheus.Histogram
	syncDuration  prometheus.Histogram
	dataKeys      *prometheus.CounterVec
}

// NewMetrics registers the metrics fed by the writer on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		eventsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventstore_events_written_total", Help: "Events committed."}),
		writeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "eventstore_write_duration_seconds", Help: "Time from queueing a write at the writer to its acknowledgement.", Buckets: syncBuckets}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "eventstore_storage_sync_duration_seconds", Help: "Duration of each synced group commit.", Buckets: syncBuckets}),
		dataKeys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventstore_data_index_keys_total", Help: "Keys of data indexes this node committed, those of builds included."}, []string{"index"}),
	}
	return m, metrics.Register(reg, m.eventsWritten, m.writeDuration, m.syncDuration, m.dataKeys)
}

// DataKeysWritten counts the keys of a data index a commit wrote.
func (m *Metrics) DataKeysWritten(index string, keys int) {
	m.dataKeys.WithLabelValues(index).Add(float64(keys))
}

// dataIndexBuilds is the gauge of the events each data index has keyed:
// read from the store when scraped, one series per index.
type dataIndexBuilds struct {
	store *store.Store
	desc  *prometheus.Desc
}

func (d dataIndexBuilds) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d dataIndexBuilds) Collect(ch chan<- prometheus.Metric) {
	all, events, err := d.store.DataIndexes()
	if err != nil {
		return
	}
	for _, x := range all {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(x.IndexedEvents(events)), x.Name)
	}
}

// RegisterDataIndexGauge registers eventstore_data_index_build_events.
func RegisterDataIndexGauge(reg prometheus.Registerer, s *store.Store) error {
	return metrics.Register(reg, dataIndexBuilds{store: s, desc: prometheus.NewDesc("eventstore_data_index_build_events",
		"Events each data index has keyed: while it builds, those below its build's progress and those written since it was registered.", []string{"index"}, nil)})
}

// RegisterGauges registers the gauges that read the store's figures when
// scraped.
func RegisterGauges(reg prometheus.Registerer, s Figures) error {
	gauge := func(name, help string, value func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value)
	}
	return metrics.Register(reg,
		gauge("eventstore_storage_writable", "1 while the store accepts writes, 0 after a failure or while shutting down.", func() float64 {
			if s.Writable() {
				return 1
			}
			return 0
		}),
		gauge("eventstore_storage_events", "Number of durable events.", func() float64 { return float64(s.Durable()) }),
		gauge("eventstore_read_only", "1 in read-only mode, else 0.", func() float64 {
			if s.ReadOnly() {
				return 1
			}
			return 0
		}),
		gauge("eventstore_storage_head_id", "Id of the last durable event, -1 when the store is empty.", func() float64 { return float64(s.Durable()) - 1 }),
		gauge("eventstore_storage_size_bytes", "Bytes the store occupies on disk (at most 10 s old).", func() float64 {
			n, _ := s.Size()
			return float64(n)
		}),
	)
}

// Committed counts the events of a synced commit and observes its duration.
func (m *Metrics) Committed(events int, took time.Duration) {
	m.eventsWritten.Add(float64(events))
	m.syncDuration.Observe(took.Seconds())
}

// Acknowledged observes how long an accepted write waited for its answer.
func (m *Metrics) Acknowledged(took time.Duration) { m.writeDuration.Observe(took.Seconds()) }
