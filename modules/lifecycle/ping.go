package lifecycle

import (
	"net/http"

	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// PingPath is the path of the liveness endpoint.
const PingPath = "/api/v1/ping"

// NewPingRoute returns GET /api/v1/ping: no token, 200 with a ping-received
// management event while running. The server answers 503 for it from the
// first shutdown signal on, like for every route that does not opt out.
func NewPingRoute(events *envelope.Builder) httpkit.Route {
	return httpkit.Route{Method: http.MethodGet, Path: PingPath, Public: true, Probe: true, Permission: httpkit.PermitAnyToken,
		Handler: events.Handler(PingPath, envelope.TypePingReceived, map[string]string{"message": "pong"})}
}
