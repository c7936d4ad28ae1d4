package eventapi

import (
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/httpserver"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Module contributes the event endpoints and provides the Emitter that
// writes events with the configured signing key.
var Module = fx.Module("eventapi",
	fx.Provide(
		func(cfg config.Config) *event.Emitter { return event.NewEmitter(cfg.SigningKey) },
		NewMetrics,
		func(s *store.Store, e *event.Emitter, b *envelope.Builder, m *Metrics, log *zap.Logger, cfg config.Config, state *lifecycle.State) *API {
			return New(s, e, b, m, log.Named("eventapi"), Options{
				MaxEventSize: cfg.MaxEventSize,
				Stopping:     state.Stopping(),
				EventQL: QueryLimits{MemoryLimit: cfg.EventQLMemoryLimit, PreconditionTimeout: cfg.EventQLPreconditionTimeout,
					QueryTimeout: cfg.EventQLQueryTimeout},
				MaxStreams: cfg.MaxStreams,
				MaxQueries: cfg.MaxQueries,
			})
		},
		httpserver.AsRoutes(func(a *API) []httpkit.Route { return a.Routes() }),
	),
)
