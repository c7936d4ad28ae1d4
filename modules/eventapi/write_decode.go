package eventapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// MaxEventsPerWrite is the most events one write-events request may carry.
const MaxEventsPerWrite = 10_000

type writeBody struct {
	Events        []wireCandidate    `json:"events"`
	Preconditions []wirePrecondition `json:"preconditions"`
}

type wireCandidate struct {
	Source      string          `json:"source"`
	Subject     string          `json:"subject"`
	Type        string          `json:"type"`
	Data        json.RawMessage `json:"data"`
	TraceParent *string         `json:"traceparent"`
	TraceState  *string         `json:"tracestate"`
}

type wirePrecondition struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

type preconditionPayload struct {
	Subject *string `json:"subject"`
	EventID *string `json:"eventId"`
	Query   *string `json:"query"`
}

// DecodeWrite turns a write-events body into validated candidates, with
// canonical data, and preconditions. Problems are reported in the order of
// api.md: JSON decoding, limits, each event's fields in order, then the
// preconditions.
func DecodeWrite(body []byte, maxEventSize int64) ([]event.Candidate, []store.Precondition, error) {
	var req writeBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return nil, nil, err
	}
	switch n := len(req.Events); {
	case n == 0:
		return nil, nil, badRequest("invalid request: events must contain at least one event")
	case n > MaxEventsPerWrite:
		return nil, nil, badRequest("invalid request: too many events: %d exceeds the limit of %d", n, MaxEventsPerWrite)
	}
	candidates := make([]event.Candidate, len(req.Events))
	for i, e := range req.Events {
		c, err := decodeCandidate(e, maxEventSize)
		if err != nil {
			return nil, nil, err
		}
		candidates[i] = c
	}
	preconditions := make([]store.Precondition, 0, len(req.Preconditions))
	for _, p := range req.Preconditions {
		pc, err := decodePrecondition(p)
		if err != nil {
			return nil, nil, err
		}
		preconditions = append(preconditions, pc)
	}
	return candidates, preconditions, nil
}

func decodeCandidate(e wireCandidate, maxEventSize int64) (event.Candidate, error) {
	switch {
	case !event.ValidSource(e.Source):
		return event.Candidate{}, badRequest("invalid source: '%s'", e.Source)
	case !event.ValidSubject(e.Subject):
		return event.Candidate{}, badRequest("invalid subject: '%s'", e.Subject)
	case !event.ValidType(e.Type):
		return event.Candidate{}, badRequest("invalid event type: '%s'", e.Type)
	}
	data, err := event.Canonicalize(e.Data)
	switch {
	case errors.Is(err, event.ErrNotObject) || len(e.Data) == 0:
		return event.Candidate{}, badRequest("invalid data: data must be a JSON object")
	case err != nil:
		return event.Candidate{}, badRequest("invalid data: %v", err)
	case int64(len(data)) > maxEventSize:
		return event.Candidate{}, badRequest("invalid data: event data exceeds the limit of %d bytes", maxEventSize)
	}
	c := event.Candidate{Source: e.Source, Subject: e.Subject, Type: e.Type, Data: data}
	if e.TraceParent != nil {
		c.TraceParent = *e.TraceParent
	}
	if e.TraceState != nil {
		c.TraceState = *e.TraceState
	}
	switch {
	case c.TraceParent != "" && !event.ValidTraceParent(c.TraceParent):
		return event.Candidate{}, badRequest("invalid traceparent: '%s'", c.TraceParent)
	case c.TraceState != "" && c.TraceParent == "":
		return event.Candidate{}, badRequest("invalid tracestate: tracestate requires traceparent")
	case len(c.TraceState) > event.MaxTraceStateLength:
		return event.Candidate{}, badRequest("invalid tracestate: longer than %d bytes", event.MaxTraceStateLength)
	}
	return c, nil
}

func decodePrecondition(p wirePrecondition) (store.Precondition, error) {
	kinds := map[string]store.PreconditionKind{
		"isSubjectPristine":  store.SubjectPristine,
		"isSubjectPopulated": store.SubjectPopulated,
		"isSubjectOnEventId": store.SubjectOnEventID,
	}
	kind, known := kinds[p.Type]
	if !known && p.Type != "isEventQlQueryTrue" {
		return store.Precondition{}, badRequest("invalid precondition: unknown type '%s'", p.Type)
	}
	if len(p.Payload) == 0 || string(p.Payload) == "null" {
		return store.Precondition{}, badRequest("invalid precondition: missing payload")
	}
	var payload preconditionPayload
	if err := json.Unmarshal(p.Payload, &payload); err != nil {
		return store.Precondition{}, badRequest("invalid precondition: malformed payload: %v", err)
	}
	if p.Type == "isEventQlQueryTrue" {
		return store.Precondition{}, badRequest("invalid precondition: isEventQlQueryTrue is not supported yet")
	}
	subject := deref(payload.Subject)
	if !event.ValidSubject(subject) {
		return store.Precondition{}, badRequest("invalid precondition: invalid subject: '%s'", subject)
	}
	pc := store.Precondition{Kind: kind, Subject: subject}
	if kind == store.SubjectOnEventID {
		id, ok := event.ParseID(deref(payload.EventID))
		if !ok {
			return store.Precondition{}, badRequest("invalid precondition: invalid event id: '%s'", deref(payload.EventID))
		}
		pc.EventID = id
	}
	return pc, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func badRequest(format string, args ...any) *httpkit.Error {
	return httpkit.Errorf(http.StatusBadRequest, format, args...)
}
