package health

import (
	"time"

	"go.uber.org/fx"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

// Module provides the health route. Other modules contribute checks with
// AsCheck, and the storage module the ServiceID; the module itself
// contributes "uptime".
var Module = fx.Module("health",
	fx.Provide(
		AsCheck(func() Check { return NewUptimeCheck(time.Now()) }),
		fx.Annotate(newReporter, fx.ParamTags(`group:"health.checks"`)),
		fx.Annotate(NewRoute, fx.ResultTags(`group:"routes"`)),
	),
)

// AsCheck annotates a constructor of a Check so that its result joins the
// health report.
func AsCheck(constructor any) any {
	return fx.Annotate(constructor, fx.ResultTags(`group:"health.checks"`))
}

func newReporter(checks []Check, build config.Build, id ServiceID, state *lifecycle.State) *Reporter {
	return NewReporter(checks, build.Version, id, state.ShuttingDown)
}
