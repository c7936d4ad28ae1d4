package datadir

import (
	"context"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

// Module provides the data directory, opened first and closed last, and
// contributes its path to the start announcement and its removal to the
// cleanups after a shutdown timeout.
var Module = fx.Module("datadir",
	fx.Provide(
		fx.Annotate(
			func(cfg config.Config) *Dir { return New(cfg.DataDirectory, cfg.DataDirectoryTemporary) },
			fx.OnStart(func(ctx context.Context, d *Dir) error { return d.Open(ctx) }),
			fx.OnStop(func(ctx context.Context, d *Dir) error { return d.Close(ctx) }),
		),
		fx.Annotate(announce, fx.ResultTags(`group:"announcements"`)),
		fx.Annotate(func(d *Dir) lifecycle.Cleanup { return d.RemoveTemporary }, fx.ResultTags(`group:"cleanups"`)),
	),
	lifecycle.Requires[*Dir](),
)

func announce(d *Dir) lifecycle.Announcement {
	return func() []zap.Field {
		return []zap.Field{zap.String("dataDirectory", d.Path()), zap.Bool("temporary", d.Temporary())}
	}
}
