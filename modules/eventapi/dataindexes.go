package eventapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/names"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Paths of the data index endpoints (docs/api.md §4.15).
const (
	RegisterDataIndexPath = "/api/v1/register-data-index"
	ReadDataIndexesPath   = "/api/v1/read-data-indexes"
	RemoveDataIndexPath   = "/api/v1/remove-data-index"
)

// dataIndexRoutes returns the routes of the data indexes.
func (a *API) dataIndexRoutes() []httpkit.Route {
	return []httpkit.Route{
		{Method: http.MethodPost, Path: RegisterDataIndexPath, Permission: httpkit.PermitIndexes, Handler: http.HandlerFunc(a.registerDataIndex)},
		{Method: http.MethodPost, Path: ReadDataIndexesPath, Permission: httpkit.PermitReadOrQuery, Handler: a.streams.admit(a.readDataIndexes)},
		{Method: http.MethodPost, Path: RemoveDataIndexPath, Permission: httpkit.PermitIndexes, Handler: http.HandlerFunc(a.removeDataIndex)},
	}
}

// DecodeDataIndex checks a register-data-index body in the order of
// docs/api.md §4.15: the name, the path, the event types.
func DecodeDataIndex(body []byte) (dataindex.Definition, error) {
	var d dataindex.Definition
	if err := httpkit.DecodeJSON(body, &d); err != nil {
		return d, err
	}
	err := d.Validate()
	switch {
	case errors.Is(err, dataindex.ErrInvalidName):
		return d, badRequest("invalid request: invalid name %s", event.Quote(d.Name))
	case errors.Is(err, dataindex.ErrInvalidPath):
		return d, badRequest("invalid data index: invalid path %s", event.Quote(d.Path))
	case errors.Is(err, dataindex.ErrInvalidEventType):
		for _, t := range d.EventTypes {
			if !event.ValidType(t) {
				return d, badRequest("invalid event type: %s", event.Quote(t))
			}
		}
	case err != nil:
		return d, badRequest("invalid data index: %s", err.Error())
	}
	return d, err
}

// dataIndexPayload is the payload of a data index's line.
type dataIndexPayload struct {
	Name          string    `json:"name"`
	Path          string    `json:"path"`
	EventTypes    []string  `json:"eventTypes,omitempty"`
	State         string    `json:"state"`
	IndexedEvents uint64    `json:"indexedEvents"`
	Events        uint64    `json:"events"`
	CreatedAt     time.Time `json:"createdAt"`
}

// payloadOf describes x on a store of events durable events.
func payloadOf(x *store.DataIndex, events uint64) dataIndexPayload {
	p := dataIndexPayload{Name: x.Name, Path: x.Path, EventTypes: x.EventTypes, State: "ready",
		IndexedEvents: x.IndexedEvents(events), Events: events, CreatedAt: x.CreatedAt}
	if !x.Ready() {
		p.State = "building"
	}
	return p
}

// registerDataIndex is POST /api/v1/register-data-index: 200 with the
// index's payload once its registration is durable.
func (a *API) registerDataIndex(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	d, err := DecodeDataIndex(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	x, err := a.store.RegisterDataIndex(r.Context(), d)
	if err != nil {
		if r.Context().Err() == nil {
			httpkit.WriteError(w, a.dataIndexError(err, d.Name))
		}
		return
	}
	httpkit.WriteJSON(w, payloadOf(x, a.store.Durable()))
}

// readDataIndexes is POST /api/v1/read-data-indexes: an NDJSON stream of
// the data indexes, by name. The body is ignored.
func (a *API) readDataIndexes(w http.ResponseWriter, r *http.Request) {
	all, events, err := a.store.DataIndexes()
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	for _, x := range all {
		payload, err := json.Marshal(payloadOf(x, events))
		if err != nil || stream.line("dataIndex", payload) != nil {
			return
		}
	}
}

type removeDataIndexBody struct {
	Name string `json:"name"`
}

// removeDataIndex is POST /api/v1/remove-data-index: 200 once the index
// and its keys are gone.
func (a *API) removeDataIndex(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	var req removeDataIndexBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if !names.Valid(req.Name) {
		httpkit.WriteError(w, badRequest("invalid request: invalid name %s", event.Quote(req.Name)))
		return
	}
	if err := a.store.RemoveDataIndex(r.Context(), req.Name); err != nil {
		if r.Context().Err() == nil {
			httpkit.WriteError(w, a.dataIndexError(err, req.Name))
		}
		return
	}
	httpkit.WriteJSON(w, struct {
		Name    string `json:"name"`
		Removed bool   `json:"removed"`
	}{req.Name, true})
}

// dataIndexError answers an error of the store about the data index name.
func (a *API) dataIndexError(err error, name string) *httpkit.Error {
	switch {
	case errors.Is(err, store.ErrDataIndexExists):
		return httpkit.Errorf(http.StatusConflict, "state conflict: data index %s already exists", event.Quote(name))
	case errors.Is(err, store.ErrDataIndexNotFound):
		return httpkit.Errorf(http.StatusNotFound, "data index %s not found", event.Quote(name))
	case errors.Is(err, store.ErrTooManyDataIndexes):
		return httpkit.Errorf(http.StatusConflict, "too many data indexes")
	}
	return a.StoreError(err)
}
