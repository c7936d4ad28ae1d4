package config

import "go.uber.org/fx"

// Module supplies the validated configuration and the build description to
// the other modules. Validation happened in Load, before fx started.
func Module(cfg Config, build Build) fx.Option {
	return fx.Module("config", fx.Supply(cfg, build))
}
