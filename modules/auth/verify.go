package auth

import (
	"net/http"

	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// VerifyPath is the path of the token check endpoint.
const VerifyPath = "/api/v1/verify-api-token"

// NewVerifyRoute returns POST /api/v1/verify-api-token. The middleware has
// already checked the token when the handler runs, so it only confirms; the
// body is ignored.
func NewVerifyRoute(events *envelope.Builder) httpkit.Route {
	return httpkit.Route{Method: http.MethodPost, Path: VerifyPath, Permission: httpkit.PermitAnyToken,
		Handler: events.Handler(VerifyPath, envelope.TypeAPITokenVerified, nil)}
}
