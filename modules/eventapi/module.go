package eventapi

import (
	"context"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/httpserver"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
	"github.com/eventstore-service/eventstore/modules/tracing"
)

// Module contributes the event endpoints and provides the Emitter that
// writes events with the configured signing key.
var Module = fx.Module("eventapi",
	fx.Provide(
		func(cfg config.Config) *event.Emitter { return event.NewEmitter(cfg.SigningKey) },
		NewMetrics,
		func(cfg config.Config) *eventql.MemoryPool { return queryPool(cfg.MemoryLimit) },
		fx.Annotate(newSubscriptions, fx.OnStart(loadSubscriptions), fx.OnStop(stopSubscriptions)),
		newAPI,
		httpserver.AsRoutes(func(a *API) []httpkit.Route { return a.Routes() }),
	),
	fx.Invoke(registerPoolGauge, registerSubscriptionMetrics),
	lifecycle.Requires[*subscriptions.Manager](), // loaded before the service runs
)

// apiParams are what the API is built from.
type apiParams struct {
	fx.In
	Store   *store.Store
	Emitter *event.Emitter
	Events  *envelope.Builder // of management events
	Metrics *Metrics
	Log     *zap.Logger
	Config  config.Config
	State   *lifecycle.State    // the stop phase and the restores
	Pool    *eventql.MemoryPool // nil without a memory limit
	Subs    *subscriptions.Manager
	Tracing *tracing.Tracing
}

func newAPI(p apiParams) *API {
	cfg := p.Config
	return New(p.Store, p.Emitter, p.Events, p.Metrics, p.Log.Named("eventapi"), Options{
		MaxEventSize:   cfg.MaxEventSize,
		MaxRequestSize: cfg.MaxRequestSize,
		Stopping:       p.State.Stopping(),
		EventQL: QueryLimits{MemoryLimit: cfg.EventQLMemoryLimit, PreconditionTimeout: cfg.EventQLPreconditionTimeout,
			QueryTimeout: cfg.EventQLQueryTimeout, Pool: p.Pool},
		MaxStreams:    cfg.MaxStreams,
		Restores:      p.State,
		MaxQueries:    cfg.MaxQueries,
		Subscriptions: p.Subs,
		Tracer:        p.Tracing.Tracer(),
	})
}

// newSubscriptions returns the manager of the subscriptions of s; in
// PostgreSQL mode it serves them as one node among others, under a name of
// its own.
func newSubscriptions(s *store.Store, cfg config.Config) *subscriptions.Manager {
	m := subscriptions.NewManager(s, cfg.MaxSubscriptions)
	if cfg.StorageBackend == config.BackendPostgres {
		m.Share(uuid.NewString(), cfg.SubscriptionLeaseTimeout)
	}
	return m
}

// loadSubscriptions reads the stored subscriptions once the store runs,
// and starts keeping the node's leases in PostgreSQL mode.
func loadSubscriptions(m *subscriptions.Manager) error {
	if err := m.Load(); err != nil {
		return err
	}
	m.Start()
	return nil
}

// stopSubscriptions stops keeping the node's leases and gives them up.
func stopSubscriptions(ctx context.Context, m *subscriptions.Manager) {
	m.Stop(ctx)
}

// registerPoolGauge shows how much of the shared query memory is taken.
func registerPoolGauge(reg prometheus.Registerer, pool *eventql.MemoryPool) error {
	if pool == nil {
		return nil
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "eventstore_eventql_memory_bytes", Help: "Memory the running queries hold in their blocking steps (bounded by a third of the memory limit).",
	}, func() float64 { return float64(pool.Used()) }))
}

// queryPool returns the memory all running queries share: a third of the
// process's memory limit, none without one.
func queryPool(memoryLimit int64) *eventql.MemoryPool {
	if memoryLimit <= 0 {
		return nil
	}
	return eventql.NewMemoryPool(memoryLimit / 3)
}
