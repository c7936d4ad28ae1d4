package opsapi

import (
	"net/http"

	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/eventapi"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// ReadOnlyPath is the path that puts the service into read-only mode.
const ReadOnlyPath = "/api/v1/put-into-read-only-mode"

// NewReadOnlyRoute returns POST /api/v1/put-into-read-only-mode: the store
// refuses writes and registrations from the answer on (those queued before
// are committed first), until a restart without --read-only. It answers
// the read-only-mode-entered management event, also when already read-only.
// A failure is answered as api answers those of the event endpoints.
func NewReadOnlyRoute(s *store.Store, api *eventapi.API, events *envelope.Builder) httpkit.Route {
	answer := events.Handler(ReadOnlyPath, envelope.TypeReadOnlyModeEntered, nil)
	return httpkit.Route{Method: http.MethodPost, Path: ReadOnlyPath, Permission: httpkit.PermitOperate, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.EnterReadOnly(r.Context()); err != nil {
			if r.Context().Err() != nil {
				return
			}
			httpkit.WriteError(w, api.StoreError(err))
			return
		}
		answer.ServeHTTP(w, r)
	})}
}
