package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
)

// openTimeout bounds connecting to PostgreSQL and migrating its schema at
// start.
const openTimeout = time.Minute

// Postgres opens the PostgreSQL backend for the store and reports on it
// once it is open: the service id, the pool and the commits.
type Postgres struct {
	url      string // holds a password: never logged
	hosts    string
	database string
	maxConns int
	log      *zap.Logger
	backend  atomic.Pointer[pgstore.Backend]
}

// NewPostgres returns the PostgreSQL backend of cfg, opened by Open.
func NewPostgres(cfg config.Config, log *zap.Logger) *Postgres {
	hosts, database := pgstore.Describe(cfg.PostgresURL)
	return &Postgres{url: cfg.PostgresURL, hosts: hosts, database: database, maxConns: cfg.PostgresMaxConnections, log: log}
}

// Open is the store.Opener: it connects, checks the server's settings and
// creates or migrates the schema.
func (p *Postgres) Open() (store.Backend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	b, err := pgstore.Open(ctx, p.url, p.log, pgstore.Options{MaxConnections: p.maxConns})
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL database %s on %s: %w", p.database, p.hosts, err)
	}
	p.backend.Store(b)
	return b, nil
}

// ServiceID returns the service id kept in the database, "" before Open.
func (p *Postgres) ServiceID() string {
	if b := p.backend.Load(); b != nil {
		return b.ServiceID()
	}
	return ""
}

// Announce names the database in the start announcement: hosts and
// database, never the URL.
func (p *Postgres) Announce() []zap.Field {
	return []zap.Field{zap.String("postgresHosts", p.hosts), zap.String("postgresDatabase", p.database), zap.Int("postgresMaxConnections", p.maxConns)}
}

// stats returns the backend's figures, zero before Open.
func (p *Postgres) stats() pgstore.Stats {
	if b := p.backend.Load(); b != nil {
		return b.Stats()
	}
	return pgstore.Stats{}
}

// RegisterMetrics registers the pool's connections and the commits that
// were retried or had their outcome looked up. Commit latency is
// eventstore_storage_sync_duration_seconds, as on Pebble.
func (p *Postgres) RegisterMetrics(reg prometheus.Registerer) error {
	gauge := func(name, help string, value func(pgstore.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return value(p.stats()) })
	}
	counter := func(name, help string, value func(pgstore.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return value(p.stats()) })
	}
	return metrics.Register(reg,
		gauge("eventstore_postgres_connections_in_use", "PostgreSQL connections of this node's pool in use.", func(s pgstore.Stats) float64 { return float64(s.InUse) }),
		gauge("eventstore_postgres_connections_idle", "Idle PostgreSQL connections of this node's pool.", func(s pgstore.Stats) float64 { return float64(s.Idle) }),
		gauge("eventstore_postgres_connections_max", "Size of this node's PostgreSQL pool.", func(s pgstore.Stats) float64 { return float64(s.Max) }),
		counter("eventstore_postgres_commit_retries_total", "Commits that failed with the database unreachable, nothing stored, and were tried again or answered 503.", func(s pgstore.Stats) float64 { return float64(s.CommitRetries) }),
		counter("eventstore_postgres_commit_outcomes_resolved_total", "Commits whose connection broke during COMMIT and whose outcome was looked up.", func(s pgstore.Stats) float64 { return float64(s.Resolved) }),
	)
}
