package storage

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/health"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// Module provides the Store on Pebble in the data directory, opened after
// the data directory and closed before it, with its metrics and health
// checks.
var Module = fx.Module("storage",
	fx.Provide(
		NewMetrics,
		fx.Annotate(
			func(cfg config.Config, dir *datadir.Dir, log *zap.Logger, m *Metrics) *store.Store {
				cache, memtable := PebbleMemory(cfg.MemoryLimit)
				open := func() (store.Backend, error) {
					b, err := OpenBackend(dir, log.Named("pebble"), pebblestore.Options{CacheSize: cache, MemTableSize: memtable})
					if err != nil {
						return nil, err
					}
					return b, nil
				}
				return store.New(open, log.Named("store"), m)
			},
			fx.OnStart(func(ctx context.Context, cfg config.Config, s *store.Store) error {
				if err := s.Start(ctx); err != nil {
					return err
				}
				if cfg.ReadOnly {
					return s.EnterReadOnly(ctx)
				}
				return nil
			}),
			fx.OnStop(func(ctx context.Context, s *store.Store) error { return s.Close(ctx) }),
		),
		fx.Annotate(func(s *store.Store) []health.Check { return HealthChecks(s) }, fx.ResultTags(`group:"health.checks,flatten"`)),
	),
	fx.Invoke(func(reg prometheus.Registerer, s *store.Store) error { return RegisterGauges(reg, s) }),
)
