package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
)

// Module provides the private registry (also as Registerer and Gatherer),
// the HTTP request metrics and the Exposition.
var Module = fx.Module("metrics",
	fx.Provide(
		NewRegistry,
		func(reg *prometheus.Registry) prometheus.Registerer { return reg },
		func(reg *prometheus.Registry) prometheus.Gatherer { return reg },
		NewHTTP,
		NewExposition,
	),
)
