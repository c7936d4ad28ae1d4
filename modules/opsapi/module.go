package opsapi

import (
	"go.uber.org/fx"
)

// Module contributes the operations endpoints.
var Module = fx.Module("opsapi",
	fx.Provide(fx.Annotate(NewReadOnlyRoute, fx.ResultTags(`group:"routes"`))),
)
