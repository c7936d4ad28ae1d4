package opsapi

import (
	"go.uber.org/fx"
)

// Module contributes the operations endpoints and the diagnostics report.
var Module = fx.Module("opsapi",
	fx.Provide(
		NewDiagnostics,
		fx.Annotate(NewReadOnlyRoute, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(NewDiagnosticsRoute, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(NewVerifyStoreRoute, fx.ResultTags(`group:"routes"`)),
	),
)
