package ui

import (
	"go.uber.org/fx"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/httpserver"
	"github.com/eventstore-service/eventstore/ui"
)

// Module contributes the UI routes when --with-ui is set, and none otherwise.
var Module = fx.Module("ui",
	fx.Provide(httpserver.AsRoutes(func(cfg config.Config) ([]httpkit.Route, error) {
		if !cfg.WithUI {
			return nil, nil
		}
		return NewRoutes(ui.Files)
	})),
)
