package storage

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/health"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/tracing"
)

// Module returns the storage of cfg's backend: the Store on Pebble in the
// data directory (opened after the directory, closed before it), or on the
// PostgreSQL database shared with other nodes; with its metrics, health
// checks, the service id and the start announcement. cfg only picks the
// backend's providers; everything else reads the supplied config.Config.
func Module(cfg config.Config) fx.Option {
	backend := pebbleBackend
	if cfg.StorageBackend == config.BackendPostgres {
		backend = postgresBackend
	}
	return fx.Module("storage",
		backend,
		fx.Provide(
			NewMetrics,
			fx.Annotate(newStore,
				fx.OnStart(startStore),
				fx.OnStop(func(ctx context.Context, s *store.Store) error { return s.Close(ctx) }),
			),
			fx.Annotate(func(s *store.Store) []health.Check { return HealthChecks(s) }, fx.ResultTags(`group:"health.checks,flatten"`)),
			fx.Annotate(announce, fx.ResultTags(`group:"announcements"`)),
		),
		fx.Invoke(func(reg prometheus.Registerer, s *store.Store) error { return RegisterGauges(reg, s) }),
		fx.Invoke(RegisterDataIndexGauge),
		lifecycle.Requires[*store.Store](),
	)
}

// newStore returns the Store on the backend that open opens, within the
// memory and schema limits of cfg, recording spans with tracing on.
func newStore(open store.Opener, log *zap.Logger, m *Metrics, cfg config.Config, t *tracing.Tracing) *store.Store {
	mem := StoreMemory(cfg.MemoryLimit)
	mem.MaxSchemas, mem.MaxDataIndexes = cfg.MaxEventSchemas, cfg.MaxDataIndexes
	s := store.New(open, log.Named("store"), m, mem)
	if t.Enabled() {
		s.Trace(t.Tracer())
	}
	return s
}

// startStore starts s, read-only from the start under --read-only.
func startStore(ctx context.Context, s *store.Store, cfg config.Config) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	if cfg.ReadOnly {
		return s.EnterReadOnly(ctx)
	}
	return nil
}

// announce names the storage backend in the start log.
func announce(cfg config.Config) lifecycle.Announcement {
	return func() []zap.Field { return []zap.Field{zap.String("storageBackend", cfg.StorageBackend)} }
}

// pebbleBackend opens Pebble in the data directory, whose service id the
// service has.
var pebbleBackend = fx.Options(
	datadir.Module,
	fx.Provide(
		func(cfg config.Config, dir *datadir.Dir, log *zap.Logger) store.Opener {
			cache, memtable := PebbleMemory(cfg.MemoryLimit)
			return func() (store.Backend, error) {
				b, err := OpenBackend(dir, log.Named("pebble"), pebblestore.Options{CacheSize: cache, MemTableSize: memtable, MaxOpenFiles: cfg.Files.StorageFiles,
					KeyFilterBytes: KeyFilterBytes(cfg.MemoryLimit)})
				if err != nil {
					return nil, err
				}
				return b, nil
			}
		},
		func(dir *datadir.Dir) health.ServiceID { return dir.ServiceID },
	),
)

// postgresBackend opens the PostgreSQL database, whose service id the
// service has, and registers the pool's metrics.
var postgresBackend = fx.Options(
	fx.Provide(
		func(cfg config.Config, log *zap.Logger) *Postgres { return NewPostgres(cfg, log.Named("postgres")) },
		func(p *Postgres) store.Opener { return p.Open },
		func(p *Postgres) health.ServiceID { return p.ServiceID },
		fx.Annotate(func(p *Postgres) lifecycle.Announcement { return p.Announce }, fx.ResultTags(`group:"announcements"`)),
	),
	fx.Invoke(func(reg prometheus.Registerer, p *Postgres) error { return p.RegisterMetrics(reg) }),
)
