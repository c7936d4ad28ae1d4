package auth

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

// Module provides the Authenticator, the Watcher that reloads its tokens
// (on SIGHUP too), and the verify-api-token and read-access routes.
var Module = fx.Module("auth",
	fx.Provide(
		func(cfg config.Config, log *zap.Logger, reg prometheus.Registerer) (*Authenticator, error) {
			tokens, err := LoadTokens(cfg, log.Named("auth"))
			if err != nil {
				return nil, err
			}
			return New(tokens, log.Named("audit"), reg)
		},
		fx.Annotate(func(a *Authenticator, cfg config.Config, log *zap.Logger) *Watcher {
			return NewWatcher(a, cfg, log.Named("audit"))
		}, fx.OnStart(func(w *Watcher) { w.Start() }), fx.OnStop(func(w *Watcher) { w.Stop() })),
		fx.Annotate(func(w *Watcher) lifecycle.Reload { return w.Reload }, fx.ResultTags(`group:"reloads"`)),
		fx.Annotate(NewVerifyRoute, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(NewReadAccessRoute, fx.ResultTags(`group:"routes"`)),
	),
	lifecycle.Requires[*Watcher](), // watching before the service runs
)
