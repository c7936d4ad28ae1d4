package mcpapi

import (
	"net/http"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/httpserver"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

// Module serves /mcp when --mcp-enabled is set; otherwise it adds nothing
// and /mcp is an unknown route.
var Module = fx.Module("mcpapi",
	fx.Provide(
		func(cfg config.Config, build config.Build, state *lifecycle.State, log *zap.Logger) *Server {
			if !cfg.MCP.Enabled {
				return nil
			}
			return New(Options{Version: build.Version, AllowWrites: cfg.MCP.AllowWrites, MaxResults: cfg.MCP.MaxResults,
				Stopping: state.Stopping(), Log: log.Named("mcp")})
		},
		httpserver.AsRoutes(func(s *Server) []httpkit.Route {
			if s == nil {
				return nil
			}
			return []httpkit.Route{s.Route()}
		}),
	),
	fx.Invoke(func(s *Server, h http.Handler) {
		if s != nil {
			s.SetRoutes(h)
		}
	}),
)
