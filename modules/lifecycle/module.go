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
// state transitions. List it last among the modules: its hooks must start
// after, and stop before, all others (the announcements it consumes pull the
// listeners in before it, too).
var Module = fx.Module("lifecycle",
	fx.Provide(
		NewState,
		newRunner,
		fx.Annotate(NewPingRoute, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(announceBuild, fx.ResultTags(`group:"announcements"`)),
		fx.Annotate(newHooks,
			fx.ParamTags(``, ``, ``, `group:"announcements"`),
			fx.OnStart(func(ctx context.Context, h *Hooks) error { return h.Start(ctx) }),
			fx.OnStop(func(ctx context.Context, h *Hooks) error { return h.Stop(ctx) }),
		),
	),
	fx.Invoke(func(*Hooks) {}),
)

func newHooks(log *zap.Logger, state *State, cfg config.Config, announcements []Announcement) *Hooks {
	return NewHooks(log.Named("lifecycle"), state, cfg.ShutdownDrainPeriod, announcements)
}

type runnerParams struct {
	fx.In
	Log      *zap.Logger
	State    *State
	Config   config.Config
	Cleanups []Cleanup `group:"cleanups"`
}

func newRunner(p runnerParams) *Runner {
	return NewRunner(p.Log.Named("lifecycle"), p.State, RunnerOptions{
		StartTimeout:    StartTimeout,
		DrainPeriod:     p.Config.ShutdownDrainPeriod,
		ShutdownTimeout: p.Config.ShutdownTimeout,
		Cleanups:        p.Cleanups,
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
