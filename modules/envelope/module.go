package envelope

import "go.uber.org/fx"

// Module provides the management-event Builder.
var Module = fx.Module("envelope", fx.Provide(NewBuilder))
