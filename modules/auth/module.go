package auth

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
)

// Module provides the Authenticator and the verify-api-token route.
var Module = fx.Module("auth",
	fx.Provide(
		func(cfg config.Config, log *zap.Logger, reg prometheus.Registerer) (*Authenticator, error) {
			return New(cfg.APIToken, log.Named("auth"), reg)
		},
		fx.Annotate(NewVerifyRoute, fx.ResultTags(`group:"routes"`)),
	),
)
