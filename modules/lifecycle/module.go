package lifecycle

import (
	"context"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
)

// StartTimeout limits the start of all modules, storage recovery included.
const StartTimeout = 5 * time.Minute

// Module provides the State, the Runner and the ping route, and registers the
// state transitions. Its hooks start after, and stop before, those of every
// component that a module declares with Requires, wherever the modules are
// listed: the hooks depend on those components, and fx starts a component's
// dependencies first and stops them last.
var Module = fx.Module("lifecycle",
	fx.Provide(
		NewState,
		newRunner,
		fx.Annotate(NewPingRoute, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(announceBuild, fx.ResultTags(`group:"announcements"`)),
		fx.Annotate(newHooks,
			fx.OnStart(func(ctx context.Context, h *Hooks) error { return h.Start(ctx) }),
			fx.OnStop(func(ctx context.Context, h *Hooks) error { return h.Stop(ctx) }),
		),
	),
	fx.Invoke(func(*Hooks) {}),
)

// Requires declares T, a component with start and stop hooks of its own, a
// dependency of the lifecycle's hooks: T has started before the service
// enters Running, and stops only after the drain period. A module lists it
// beside the constructor of T.
func Requires[T any]() fx.Option {
	return fx.Provide(fx.Annotate(func(T) required { return required{} }, fx.ResultTags(`group:"lifecycle.required"`)))
}

// required stands for a component that the lifecycle's hooks require.
type required struct{}

type hooksParams struct {
	fx.In
	Log           *zap.Logger
	State         *State
	Config        config.Config
	Announcements []Announcement `group:"announcements"`
	Required      []required     `group:"lifecycle.required"` // built, hooks and all, before the Hooks
}

func newHooks(p hooksParams) *Hooks {
	return NewHooks(p.Log.Named("lifecycle"), p.State, p.Config.ShutdownDrainPeriod, p.Announcements)
}

type runnerParams struct {
	fx.In
	Log      *zap.Logger
	State    *State
	Config   config.Config
	Cleanups []Cleanup `group:"cleanups"`
	Reloads  []Reload  `group:"reloads"`
}

func newRunner(p runnerParams) *Runner {
	return NewRunner(p.Log.Named("lifecycle"), p.State, RunnerOptions{
		StartTimeout:    StartTimeout,
		DrainPeriod:     p.Config.ShutdownDrainPeriod,
		ShutdownTimeout: p.Config.ShutdownTimeout,
		Cleanups:        p.Cleanups,
		Reloads:         p.Reloads,
	})
}

func announceBuild(cfg config.Config, build config.Build) Announcement {
	return func() []zap.Field {
		return []zap.Field{
			zap.String("version", build.Version),
			zap.String("revision", build.Revision),
			zap.String("goVersion", build.GoVersion),
			zap.Bool("ui", cfg.WithUI),
			zap.Bool("signing", cfg.SigningKey != nil),
			zap.Int64("memoryLimit", cfg.MemoryLimit),
			zap.String("memoryLimitSource", cfg.MemorySource),
		}
	}
}
