package httpserver

import (
	"context"
	"net/http"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/tracing"
)

// Module serves every route of the "routes" group. Modules contribute routes
// with AsRoutes or fx.ResultTags(`group:"routes"`).
var Module = fx.Module("httpserver",
	fx.Provide(
		newHandler,
		fx.Annotate(
			func(cfg config.Config, build config.Build, log *zap.Logger, h http.Handler, m *metrics.HTTP) *Server {
				return New(cfg, log.Named("http"), h, build.Version, m)
			},
			fx.OnStart(func(ctx context.Context, s *Server) error { return s.Start(ctx) }),
			fx.OnStop(func(ctx context.Context, s *Server) error { return s.Stop(ctx) }),
		),
		fx.Annotate(announce, fx.ResultTags(`group:"announcements"`)),
	),
	lifecycle.Requires[*Server](),
)

// AsRoutes annotates a constructor of []httpkit.Route so that its routes
// join the server.
func AsRoutes(constructor any) any {
	return fx.Annotate(constructor, fx.ResultTags(`group:"routes,flatten"`))
}

type handlerParams struct {
	fx.In
	Routes  []httpkit.Route `group:"routes"`
	Config  config.Config
	Build   config.Build
	State   *lifecycle.State
	Auth    *auth.Authenticator
	Metrics *metrics.HTTP
	Tracing *tracing.Tracing
	Log     *zap.Logger
}

func newHandler(p handlerParams) (http.Handler, error) {
	return NewHandler(HandlerOptions{
		Routes:         p.Routes,
		Version:        p.Build.Version,
		MaxRequestSize: p.Config.MaxRequestSize,
		BodyTimes:      BodyTimes{Idle: p.Config.RequestBodyIdleTimeout, Total: p.Config.RequestBodyTimeout},
		Stopping:       p.State.Stopping(),
		ShuttingDown:   p.State.ShuttingDown,
		Restoring:      p.State.Restoring,
		Auth:           p.Auth,
		Tracing:        p.Tracing,
		Metrics:        p.Metrics,
		Log:            p.Log.Named("http"),
	})
}

// announce names the listeners in the start log, with the open-file limit
// the process raised and the connections it admits.
func announce(s *Server, cfg config.Config) lifecycle.Announcement {
	return func() []zap.Field {
		return []zap.Field{
			zap.Strings("listeners", s.Listeners()),
			zap.Uint64("openFileLimit", cfg.Files.Limit),
			zap.Int("maxConnections", cfg.MaxConnections),
		}
	}
}
