package store

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/health"
)

// Module provides the Store over the Opener of a backend module (such as
// pebblestore.Module), opened after the data directory and closed before
// it, with its metrics and health checks.
var Module = fx.Module("store",
	fx.Provide(
		NewMetrics,
		fx.Annotate(
			func(open Opener, log *zap.Logger, m *Metrics) *Store { return New(open, log.Named("store"), m) },
			fx.OnStart(func(ctx context.Context, s *Store) error { return s.Start(ctx) }),
			fx.OnStop(func(ctx context.Context, s *Store) error { return s.Close(ctx) }),
		),
		fx.Annotate(func(s *Store) []health.Check { return s.HealthChecks() }, fx.ResultTags(`group:"health.checks,flatten"`)),
	),
	fx.Invoke(registerSizeGauge),
)

func registerSizeGauge(reg prometheus.Registerer, s *Store) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "eventstore_storage_size_bytes", Help: "Bytes the store occupies on disk (at most 10 s old).",
	}, func() float64 {
		n, _ := s.Size()
		return float64(n)
	}))
}
