package eventapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// MaxEventsPerWrite is the most events one write-events request may carry.
const MaxEventsPerWrite = 10_000

// The member names of a write-events body, matched case-insensitively
// against keys as bytes, so that reading a key allocates nothing.
var (
	keyEvents        = []byte("events")
	keyPreconditions = []byte("preconditions")
	keyAcknowledge   = []byte("acknowledge")
	keySource        = []byte("source")
	keySubject       = []byte("subject")
	keyType          = []byte("type")
	keyTraceParent   = []byte("traceparent")
	keyTraceState    = []byte("tracestate")
	keyData          = []byte("data")
	keyPayload       = []byte("payload")
	keyEventID       = []byte("eventId")
	keyQuery         = []byte("query")
)

// scannedCandidate is an event of a request as read, before validation:
// data already in canonical form, or the reason it is not.
type scannedCandidate struct {
	source, subject, eventType string
	data                       []byte
	dataErr                    error
	traceParent, traceState    string
}

// wirePrecondition is a precondition as read: its type, and its payload
// as written (read once the type is known).
type wirePrecondition struct {
	Type    string
	Payload []byte
}

// preconditionPayload holds the members of a precondition's payload.
type preconditionPayload struct {
	Subject, EventID, Query string
}

// DecodeWrite turns a write-events body into validated candidates, with
// canonical data, and preconditions. It reads the body in one pass (the
// envelope and every event's data, canonicalized on the way) and then
// reports problems in the order of docs/api.md §1.5: JSON decoding, limits, each
// event's fields in order, then the preconditions. An isEventQlQueryTrue
// precondition is compiled here and turned into a store.Condition by
// condition.
func DecodeWrite(body []byte, maxEventSize int64, condition ConditionFunc) ([]event.Candidate, []store.Precondition, error) {
	candidates, preconditions, _, err := decodeWrite(jsonscan.New(nil), body, maxEventSize, condition)
	return candidates, preconditions, err
}

// ConditionFunc turns a compiled isEventQlQueryTrue query into the
// condition the store's writer evaluates.
type ConditionFunc func(*eventql.Program) store.Condition

// decodeWrite is DecodeWrite with a Scanner to reuse; it also returns the
// raw acknowledge member (docs/api.md §4.14), nil when absent.
func decodeWrite(sc *jsonscan.Scanner, body []byte, maxEventSize int64, condition ConditionFunc) ([]event.Candidate, []store.Precondition, []byte, error) {
	scanned, rawPreconditions, acknowledge, err := scanWrite(sc, body)
	if err != nil {
		return nil, nil, nil, err
	}
	switch n := len(scanned); {
	case n == 0:
		return nil, nil, nil, badRequest("invalid request: events must contain at least one event")
	case n > MaxEventsPerWrite:
		return nil, nil, nil, badRequest("invalid request: too many events: %d exceeds the limit of %d", n, MaxEventsPerWrite)
	}
	candidates := make([]event.Candidate, len(scanned))
	for i := range scanned {
		if err := validateCandidate(&scanned[i], maxEventSize); err != nil {
			return nil, nil, nil, err
		}
		s := &scanned[i]
		candidates[i] = event.Candidate{Source: s.source, Subject: s.subject, Type: s.eventType, Data: s.data, TraceParent: s.traceParent, TraceState: s.traceState}
	}
	preconditions, err := decodePreconditions(sc, rawPreconditions, condition)
	if err != nil {
		return nil, nil, nil, err
	}
	return candidates, preconditions, acknowledge, nil
}

// scanWrite reads the envelope {"events":[...],"preconditions":[...]}
// leniently (empty body or null is {}, keys match case-insensitively,
// unknown keys are skipped, the last of duplicate keys wins).
func scanWrite(sc *jsonscan.Scanner, body []byte) ([]scannedCandidate, []byte, []byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		body = []byte("{}")
	}
	if err := httpkit.CheckDepth(body); err != nil {
		return nil, nil, nil, err
	}
	sc.Reset(body)
	var (
		events        []scannedCandidate
		preconditions []byte
		acknowledge   []byte
		data          = make([]byte, 0, len(body)) // every event's canonical data, one after the other
	)
	err := sc.ObjectBytes(func(key []byte) error {
		switch {
		case bytes.EqualFold(key, keyEvents):
			events = events[:0]
			if null, err := sc.Null(); null || err != nil {
				return err
			}
			return sc.Array(func() error {
				var c scannedCandidate
				var err error
				c, data, err = scanCandidate(sc, data)
				events = append(events, c)
				return err
			})
		case bytes.EqualFold(key, keyPreconditions):
			raw, err := sc.Raw()
			preconditions = raw
			return err
		case bytes.EqualFold(key, keyAcknowledge):
			raw, err := sc.Raw()
			acknowledge = raw
			return err
		}
		return sc.Skip()
	})
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return nil, nil, nil, malformed(err)
	}
	return events, preconditions, acknowledge, nil
}

// scanCandidate reads one event, appending its canonical data to buf.
func scanCandidate(sc *jsonscan.Scanner, buf []byte) (scannedCandidate, []byte, error) {
	var c scannedCandidate
	if null, err := sc.Null(); null || err != nil {
		return c, buf, err
	}
	err := sc.ObjectBytes(func(key []byte) error {
		var (
			field *string
			err   error
		)
		switch {
		case bytes.EqualFold(key, keySource):
			field = &c.source
		case bytes.EqualFold(key, keySubject):
			field = &c.subject
		case bytes.EqualFold(key, keyType):
			field = &c.eventType
		case bytes.EqualFold(key, keyTraceParent):
			field = &c.traceParent
		case bytes.EqualFold(key, keyTraceState):
			field = &c.traceState
		case bytes.EqualFold(key, keyData):
			c.data, c.dataErr, buf, err = scanData(sc, buf)
			return err
		default:
			return sc.Skip()
		}
		*field, _, err = sc.String()
		return err
	})
	return c, buf, err
}

// scanData reads an event's data value: an object becomes canonical bytes,
// appended to buf; a number out of range or a value other than an object is
// remembered as dataErr, for validation to report in field order.
func scanData(sc *jsonscan.Scanner, buf []byte) (data []byte, dataErr error, _ []byte, err error) {
	if sc.Peek() != jsonscan.KindObject {
		return nil, jsonscan.ErrNotObject, buf, sc.Skip()
	}
	start, mark := sc.Offset(), len(buf)
	grown, err := sc.Canonical(buf)
	var rangeErr *jsonscan.RangeError
	if errors.As(err, &rangeErr) {
		// Read the value again for its syntax only, to go on past it.
		rest := jsonscan.New(sc.Rest(start))
		if err := rest.Skip(); err != nil {
			return nil, nil, buf, err
		}
		sc.Advance(start + rest.Offset())
		return nil, rangeErr, buf, nil
	}
	if err != nil {
		return nil, nil, buf, err
	}
	return grown[mark:len(grown):len(grown)], nil, grown, nil
}

func validateCandidate(c *scannedCandidate, maxEventSize int64) error {
	switch {
	case !event.ValidSource(c.source):
		return badRequest("invalid source: %s", event.Quote(c.source))
	case !event.ValidSubject(c.subject):
		return badRequest("invalid subject: %s", event.Quote(c.subject))
	case !event.ValidType(c.eventType):
		return badRequest("invalid event type: %s", event.Quote(c.eventType))
	case errors.Is(c.dataErr, jsonscan.ErrNotObject) || (c.data == nil && c.dataErr == nil):
		return badRequest("invalid data: data must be a JSON object")
	case c.dataErr != nil:
		return badRequest("invalid data: %v", c.dataErr)
	case int64(len(c.data)) > maxEventSize:
		return badRequest("invalid data: event data exceeds the limit of %d bytes", maxEventSize)
	case c.traceParent != "" && !event.ValidTraceParent(c.traceParent):
		return badRequest("invalid traceparent: %s", event.Quote(c.traceParent))
	case c.traceState != "" && c.traceParent == "":
		return badRequest("invalid tracestate: tracestate requires traceparent")
	case len(c.traceState) > event.MaxTraceStateLength:
		return badRequest("invalid tracestate: longer than %d bytes", event.MaxTraceStateLength)
	}
	return nil
}

// decodePreconditions reads the preconditions array as encoding/json
// would into typed fields (keys matched case-insensitively, unknown keys
// skipped, null as absent), with its errors: every element is read before
// any is decided, so that a malformed one is reported first.
func decodePreconditions(sc *jsonscan.Scanner, raw []byte, condition ConditionFunc) ([]store.Precondition, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	sc.Reset(raw)
	var wire []wirePrecondition
	err := func() error {
		if null, err := sc.Null(); null || err != nil {
			return err
		}
		if sc.Peek() != jsonscan.KindArray {
			return errors.New("preconditions must be a JSON array")
		}
		return sc.Array(func() error {
			var p wirePrecondition
			defer func() { wire = append(wire, p) }()
			if null, err := sc.Null(); null || err != nil {
				return err
			}
			if sc.Peek() != jsonscan.KindObject {
				return errors.New("preconditions must be a JSON object")
			}
			return sc.ObjectBytes(func(key []byte) error {
				switch {
				case bytes.EqualFold(key, keyType):
					return stringMember(sc, key, &p.Type)
				case bytes.EqualFold(key, keyPayload):
					raw, err := sc.Raw()
					p.Payload = raw
					return err
				}
				return sc.Skip()
			})
		})
	}()
	if err != nil {
		return nil, badRequest("invalid request: malformed JSON: %v", err)
	}
	preconditions := make([]store.Precondition, 0, len(wire))
	for _, p := range wire {
		pc, err := decodePrecondition(sc, p, condition)
		if err != nil {
			return nil, err
		}
		preconditions = append(preconditions, pc)
	}
	return preconditions, nil
}

// stringMember reads the string member key into dst; null leaves dst
// empty, another value is an error naming the field.
func stringMember(sc *jsonscan.Scanner, key []byte, dst *string) error {
	s, _, err := sc.String()
	if err != nil {
		var typeErr *jsonscan.TypeError
		if errors.As(err, &typeErr) {
			return fmt.Errorf("field %s must be a string", event.Quote(string(key)))
		}
		return err
	}
	*dst = s
	return nil
}

// decodePayload reads a precondition's payload.
func decodePayload(sc *jsonscan.Scanner, raw []byte) (preconditionPayload, error) {
	var payload preconditionPayload
	sc.Reset(raw)
	if sc.Peek() != jsonscan.KindObject {
		return payload, errors.New("payload must be a JSON object")
	}
	err := sc.ObjectBytes(func(key []byte) error {
		switch {
		case bytes.EqualFold(key, keySubject):
			return stringMember(sc, key, &payload.Subject)
		case bytes.EqualFold(key, keyEventID):
			return stringMember(sc, key, &payload.EventID)
		case bytes.EqualFold(key, keyQuery):
			return stringMember(sc, key, &payload.Query)
		}
		return sc.Skip()
	})
	return payload, err
}

func decodePrecondition(sc *jsonscan.Scanner, p wirePrecondition, condition ConditionFunc) (store.Precondition, error) {
	var kind store.PreconditionKind
	switch p.Type {
	case "isSubjectPristine":
		kind = store.SubjectPristine
	case "isSubjectPopulated":
		kind = store.SubjectPopulated
	case "isSubjectOnEventId":
		kind = store.SubjectOnEventID
	case "isEventQlQueryTrue":
		kind = store.ConditionHolds
	default:
		return store.Precondition{}, badRequest("invalid precondition: unknown type %s", event.Quote(p.Type))
	}
	if len(p.Payload) == 0 || string(p.Payload) == "null" {
		return store.Precondition{}, badRequest("invalid precondition: missing payload")
	}
	payload, err := decodePayload(sc, p.Payload)
	if err != nil {
		return store.Precondition{}, badRequest("invalid precondition: malformed payload: %v", err)
	}
	if kind == store.ConditionHolds {
		program, err := eventql.Compile(payload.Query)
		if err != nil {
			return store.Precondition{}, badRequest("invalid precondition: %s", err)
		}
		return store.Precondition{Kind: store.ConditionHolds, Condition: condition(program)}, nil
	}
	if !event.ValidSubject(payload.Subject) {
		return store.Precondition{}, badRequest("invalid precondition: invalid subject: %s", event.Quote(payload.Subject))
	}
	pc := store.Precondition{Kind: kind, Subject: payload.Subject}
	if kind == store.SubjectOnEventID {
		id, ok := event.ParseID(payload.EventID)
		if !ok {
			return store.Precondition{}, badRequest("invalid precondition: invalid event id: %s", event.Quote(payload.EventID))
		}
		pc.EventID = id
	}
	return pc, nil
}

func malformed(err error) *httpkit.Error {
	var apiErr *httpkit.Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return badRequest("invalid request: malformed JSON: %v", err)
}

func badRequest(format string, args ...any) *httpkit.Error {
	return httpkit.Errorf(http.StatusBadRequest, format, args...)
}
