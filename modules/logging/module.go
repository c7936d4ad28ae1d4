package logging

import (
	"go.uber.org/fx"
	"go.uber.org/zap"
)

// Module supplies the service logger and routes fx's event log through it.
// The logger is built before fx (so that even a failing fx graph is reported
// in the service's log format) and handed in here. fx.WithLogger stays
// outside the fx.Module: inside, it would cover only this module's events.
func Module(log *zap.Logger) fx.Option {
	return fx.Options(
		fx.WithLogger(FxLogger),
		fx.Module("logging", fx.Supply(log)),
	)
}
