package eventapi

import (
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// EraseEventsPath is the path of the erasure endpoint (docs/api.md §4.16).
const EraseEventsPath = "/api/v1/erase-events"

// maxErasureReason bounds an erasure's reason, in characters.
const maxErasureReason = 1000

// eraseRoute returns the route of erasures: the admin grant only.
func (a *API) eraseRoute() httpkit.Route {
	return httpkit.Route{Method: http.MethodPost, Path: EraseEventsPath, Permission: httpkit.PermitAdmin, Handler: http.HandlerFunc(a.eraseEvents)}
}

type eraseBody struct {
	Subject    string   `json:"subject"`
	Recursive  bool     `json:"recursive"`
	EventTypes []string `json:"eventTypes"`
	UpperBound *string  `json:"upperBound"`
	Reason     string   `json:"reason"`
}

// DecodeErasure checks an erase-events body: the subject, the event types,
// the upper bound, the reason.
func DecodeErasure(body []byte) (store.Erasure, error) {
	var req eraseBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return store.Erasure{}, err
	}
	if !event.ValidSubject(req.Subject) {
		return store.Erasure{}, badRequest("invalid subject: %s", event.Quote(req.Subject))
	}
	for _, t := range req.EventTypes {
		if !event.ValidType(t) {
			return store.Erasure{}, badRequest("invalid event type: %s", event.Quote(t))
		}
	}
	e := store.Erasure{Subject: req.Subject, Recursive: req.Recursive, EventTypes: req.EventTypes, Reason: req.Reason}
	if req.UpperBound != nil {
		id, ok := event.ParseID(*req.UpperBound)
		if !ok {
			return store.Erasure{}, badRequest("invalid event id: %s", event.Quote(*req.UpperBound))
		}
		e.UpperBound = &id
	}
	switch {
	case req.Reason == "":
		return store.Erasure{}, badRequest("invalid request: reason is required")
	case !utf8.ValidString(req.Reason) || utf8.RuneCountInString(req.Reason) > maxErasureReason:
		return store.Erasure{}, badRequest("invalid request: reason must be at most %d characters", maxErasureReason)
	}
	return e, nil
}

// eraseEvents is POST /api/v1/erase-events: 200 with the number of events
// erased and the management event, once the erased data is gone from the
// storage's files.
func (a *API) eraseEvents(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	e, err := DecodeErasure(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if tok := auth.TokenOf(r.Context()); tok != nil {
		e.Token = tok.Name
	}
	n, mgmt, err := a.store.Erase(r.Context(), e)
	auth.Audit(r.Context(), zap.String("subject", e.Subject), zap.Bool("recursive", e.Recursive), zap.Int("erased", n))
	switch {
	case errors.Is(err, store.ErrBeyondHead):
		httpkit.WriteError(w, httpkit.Errorf(http.StatusNotFound, "event %s not found", event.Quote(strconv.FormatUint(*e.UpperBound, 10))))
		return
	case errors.Is(err, store.ErrErasureUnsupported):
		httpkit.WriteError(w, httpkit.Errorf(http.StatusNotImplemented, "not implemented: %s", err.Error()))
		return
	case err != nil:
		if r.Context().Err() == nil {
			httpkit.WriteError(w, a.StoreError(err))
		}
		return
	}
	a.metrics.erased.Add(float64(n))
	out := strconv.AppendInt([]byte(`{"erased":`), int64(n), 10)
	out = append(out, `,"event":`...)
	if mgmt == nil {
		out = append(out, "null"...)
	} else {
		out = a.emitter.Append(out, *mgmt)
	}
	out = append(out, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
