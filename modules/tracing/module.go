package tracing

import (
	"context"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

// Module provides the Tracing of s (read by ReadSettings at start), named
// in the start log; it exports the spans that wait when the service
// stops, within the stop's time limit. The HTTP server stops before it, so its last requests'
// spans are among them.
func Module(s Settings) fx.Option {
	return fx.Module("tracing",
		fx.Provide(
			fx.Annotate(
				func(build config.Build, log *zap.Logger, reg prometheus.Registerer) (*Tracing, error) {
					return New(context.Background(), s, build.Version, os.Getenv, log.Named("tracing"), reg)
				},
				fx.OnStop(func(ctx context.Context, t *Tracing) error { return t.Shutdown(ctx) }),
			),
			fx.Annotate(func(t *Tracing) lifecycle.Announcement {
				return func() []zap.Field { return []zap.Field{zap.String("tracing", t.Describe())} }
			}, fx.ResultTags(`group:"announcements"`)),
		),
	)
}
