package eventapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Paths of the event type endpoints.
const (
	RegisterEventSchemaPath = "/api/v1/register-event-schema"
	ReadEventTypesPath      = "/api/v1/read-event-types"
	ReadEventTypePath       = "/api/v1/read-event-type"
)

type registerBody struct {
	EventType string          `json:"eventType"`
	Schema    json.RawMessage `json:"schema"`
}

// DecodeRegistration checks a register-event-schema body in the order of
// docs/api.md §4.9 (event type, then the schema's own rules) and compiles the
// schema.
func DecodeRegistration(body []byte) (string, *schema.Schema, error) {
	var req registerBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return "", nil, err
	}
	if !event.ValidType(req.EventType) {
		return "", nil, badRequest("invalid event type: %s", event.Quote(req.EventType))
	}
	if len(req.Schema) == 0 {
		return "", nil, badRequest("invalid schema: schema must be a JSON object")
	}
	sch, err := schema.Compile(req.Schema)
	var invalid *schema.InvalidError
	if errors.As(err, &invalid) {
		return "", nil, badRequest("%s", invalid.Error())
	}
	return req.EventType, sch, err
}

// registerEventSchema is POST /api/v1/register-event-schema: 200 with the
// event-schema-registered management event once the schema is durable.
func (a *API) registerEventSchema(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	eventType, sch, err := DecodeRegistration(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if err := a.store.RegisterSchema(r.Context(), eventType, sch); err != nil {
		if r.Context().Err() != nil {
			return
		}
		httpkit.WriteError(w, a.StoreError(err))
		return
	}
	httpkit.WriteJSON(w, a.events.New(RegisterEventSchemaPath, envelope.TypeEventSchemaRegistered, struct {
		EventType string          `json:"eventType"`
		Schema    json.RawMessage `json:"schema"`
	}{eventType, sch.Raw}))
}

// appendEventType writes the payload of an event type: eventType,
// isPhantom and, only when a schema is registered, schema.
func appendEventType(dst []byte, et store.EventType) []byte {
	dst = jsonscan.AppendString(append(dst, `{"eventType":`...), et.Name)
	if et.Phantom {
		dst = append(dst, `,"isPhantom":true`...)
	} else {
		dst = append(dst, `,"isPhantom":false`...)
	}
	if et.Schema != nil {
		dst = append(append(dst, `,"schema":`...), et.Schema.Raw...)
	}
	return append(dst, '}')
}

// readEventTypes is POST /api/v1/read-event-types: an NDJSON stream of
// every event type, sorted by name. The body is ignored.
func (a *API) readEventTypes(w http.ResponseWriter, r *http.Request) {
	types, err := a.store.EventTypes()
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	var payload []byte
	for _, et := range types {
		payload = appendEventType(payload[:0], et)
		if err := stream.line("eventType", payload); err != nil {
			return
		}
	}
}

type eventTypeBody struct {
	EventType string `json:"eventType"`
}

// readEventType is POST /api/v1/read-event-type: one event type as JSON.
func (a *API) readEventType(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	var req eventTypeBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if !event.ValidType(req.EventType) {
		httpkit.WriteError(w, badRequest("invalid event type: %s", event.Quote(req.EventType)))
		return
	}
	et, found, err := a.store.EventType(req.EventType)
	switch {
	case err != nil:
		httpkit.WriteError(w, a.ReadError(err))
		return
	case !found:
		httpkit.WriteError(w, httpkit.Errorf(http.StatusNotFound, "event type %s not found", event.Quote(req.EventType)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(appendEventType(nil, et), '\n'))
}
