package consumer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Event is a stored event as the service sends it (docs/api.md §2.1): the
// fields hold the JSON keys of their tags.
type Event struct {
	Source          string          `json:"source"`
	Subject         string          `json:"subject"`
	Type            string          `json:"type"`
	TraceParent     string          `json:"traceparent,omitempty"`
	TraceState      string          `json:"tracestate,omitempty"`
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	PredecessorHash string          `json:"predecessorhash"`
	Data            json.RawMessage `json:"data"`
	Hash            string          `json:"hash"`
	// Signature is "" when the service signs no events.
	Signature string `json:"signature"`
	// Raw is the event's JSON exactly as received (to verify its hash, or
	// to pass it on unchanged).
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes an event and keeps its bytes in Raw.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = Event(p)
	e.Raw = bytes.Clone(b)
	return nil
}

// EventCandidate is an event to write (docs/api.md §4.3).
type EventCandidate struct {
	// Source, Subject and Type are the event's own (§3 of the API
	// reference says what is valid).
	Source  string `json:"source"`
	Subject string `json:"subject"`
	Type    string `json:"type"`
	// Data is encoded with encoding/json and must be a JSON object
	// (json.RawMessage passes as it is); nil writes {}.
	Data any `json:"data"`
	// TraceParent and TraceState are the W3C trace context, "" for none.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// Precondition is a condition of a write (docs/api.md §4.3); build one with
// IsSubjectPristine, IsSubjectPopulated, IsSubjectOnEventID or
// IsEventQLQueryTrue.
type Precondition struct {
	// Type names the precondition, e.g. "isSubjectPristine".
	Type string `json:"type"`
	// Payload is its JSON-encoded argument.
	Payload any `json:"payload"`
}

// IsSubjectPristine holds when no event has exactly subject.
func IsSubjectPristine(subject string) Precondition {
	return Precondition{Type: "isSubjectPristine", Payload: map[string]string{"subject": subject}}
}

// IsSubjectPopulated holds when an event has exactly subject.
func IsSubjectPopulated(subject string) Precondition {
	return Precondition{Type: "isSubjectPopulated", Payload: map[string]string{"subject": subject}}
}

// IsSubjectOnEventID holds when the latest event of exactly subject has
// the id eventID.
func IsSubjectOnEventID(subject, eventID string) Precondition {
	return Precondition{Type: "isSubjectOnEventId", Payload: map[string]string{"subject": subject, "eventId": eventID}}
}

// IsEventQLQueryTrue holds when the EventQL query yields exactly one row,
// the boolean true.
func IsEventQLQueryTrue(query string) Precondition {
	return Precondition{Type: "isEventQlQueryTrue", Payload: map[string]string{"query": query}}
}

// Start is where a subscription begins (or a reset moves it): before the
// first event, after the head, or after a given event. The zero value is
// StartBeginning.
type Start struct {
	end          bool
	afterEventID string
}

var (
	// StartBeginning delivers every matching event from the first one.
	StartBeginning = Start{}
	// StartEnd delivers the events written after the head at the request.
	StartEnd = Start{end: true}
)

// StartAfter delivers the events after the event with id eventID.
func StartAfter(eventID string) Start { return Start{afterEventID: eventID} }

// ParseStart reads "beginning", "end" or an event id (the start after it).
func ParseStart(text string) (Start, error) {
	switch text {
	case "beginning":
		return StartBeginning, nil
	case "end":
		return StartEnd, nil
	}
	if _, err := strconv.ParseUint(text, 10, 64); err != nil {
		return Start{}, fmt.Errorf("start %q is none of beginning, end or an event id", text)
	}
	return StartAfter(text), nil
}

// AfterEventID returns the event id of a start after an event, and false
// for StartBeginning and StartEnd.
func (s Start) AfterEventID() (string, bool) { return s.afterEventID, s.afterEventID != "" }

// String returns "beginning", "end" or "after event <id>".
func (s Start) String() string {
	switch {
	case s.end:
		return "end"
	case s.afterEventID != "":
		return "after event " + s.afterEventID
	}
	return "beginning"
}

// MarshalJSON encodes s as the service takes it: "beginning", "end" or
// {"afterEventId":"<id>"}.
func (s Start) MarshalJSON() ([]byte, error) {
	switch {
	case s.end:
		return []byte(`"end"`), nil
	case s.afterEventID != "":
		return json.Marshal(map[string]string{"afterEventId": s.afterEventID})
	}
	return []byte(`"beginning"`), nil
}

// UnmarshalJSON decodes the service's form of a start.
func (s *Start) UnmarshalJSON(b []byte) error {
	var text string
	if json.Unmarshal(b, &text) == nil {
		switch text {
		case "beginning":
			*s = StartBeginning
			return nil
		case "end":
			*s = StartEnd
			return nil
		}
		return fmt.Errorf("unknown start %q", text)
	}
	var after struct {
		AfterEventID string `json:"afterEventId"`
	}
	if err := json.Unmarshal(b, &after); err != nil || after.AfterEventID == "" {
		return errors.New("a start is \"beginning\", \"end\" or {\"afterEventId\":…}")
	}
	*s = StartAfter(after.AfterEventID)
	return nil
}

// Options are the options of a subscription (docs/api.md §4.14). A zero
// number or duration leaves the option to the service's default; read
// back, every option holds its effective value.
type Options struct {
	// Recursive includes the events of the subject's subtree.
	Recursive bool
	// EventTypes limits the subscription to these types; nil takes all.
	EventTypes []string
	// Start is where the subscription begins.
	Start Start
	// Partitions is the number of partitions (1–1024; default 1).
	Partitions int
	// MaxInFlight is the number of unsettled deliveries a partition may
	// have (1–10,000; default 100).
	MaxInFlight int
	// AcknowledgeTimeout is the time after which an unsettled delivery is
	// sent again (1s–1h; default 30s).
	AcknowledgeTimeout time.Duration
	// MaxDeliveries is the number of attempts after which an event is
	// parked (1–1,000; default 10).
	MaxDeliveries int
}

// wireOptions are the options as the service reads and writes them.
type wireOptions struct {
	Recursive          bool     `json:"recursive,omitempty"`
	EventTypes         []string `json:"eventTypes,omitempty"`
	Start              *Start   `json:"start,omitempty"`
	Partitions         int      `json:"partitions,omitempty"`
	MaxInFlight        int      `json:"maxInFlight,omitempty"`
	AcknowledgeTimeout string   `json:"acknowledgeTimeout,omitempty"`
	MaxDeliveries      int      `json:"maxDeliveries,omitempty"`
}

// MarshalJSON encodes the options that differ from their zero value.
func (o Options) MarshalJSON() ([]byte, error) {
	w := wireOptions{Recursive: o.Recursive, EventTypes: o.EventTypes, Partitions: o.Partitions,
		MaxInFlight: o.MaxInFlight, MaxDeliveries: o.MaxDeliveries}
	if o.EventTypes != nil && len(o.EventTypes) == 0 {
		w.EventTypes = nil
	}
	if o.Start != StartBeginning {
		w.Start = &o.Start
	}
	if o.AcknowledgeTimeout != 0 {
		w.AcknowledgeTimeout = o.AcknowledgeTimeout.String()
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes the options the service sends back.
func (o *Options) UnmarshalJSON(b []byte) error {
	var w wireOptions
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = Options{Recursive: w.Recursive, EventTypes: w.EventTypes, Partitions: w.Partitions, MaxInFlight: w.MaxInFlight, MaxDeliveries: w.MaxDeliveries}
	if w.Start != nil {
		o.Start = *w.Start
	}
	if w.AcknowledgeTimeout != "" {
		d, err := time.ParseDuration(w.AcknowledgeTimeout)
		if err != nil {
			return fmt.Errorf("acknowledgeTimeout: %w", err)
		}
		o.AcknowledgeTimeout = d
	}
	return nil
}

// Subscription is a subscription's definition and state, as
// read-subscription answers.
type Subscription struct {
	Name      string    `json:"subscription"`
	Subject   string    `json:"subject"`
	Options   Options   `json:"options"`
	CreatedAt time.Time `json:"createdAt"`
	// Lag counts the matching events after the positions that are not in
	// flight.
	Lag uint64 `json:"lag"`
	// InFlight counts the deliveries sent and not settled.
	InFlight int `json:"inFlight"`
	// Parked counts the parked events.
	Parked int `json:"parked"`
	// Consumers are the consumers connected now.
	Consumers []ConsumerInfo `json:"consumers"`
	// Partitions are the partitions in order.
	Partitions []Partition `json:"partitions"`
	// Raw is the service's JSON exactly as received.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a subscription and keeps its bytes in Raw.
func (s *Subscription) UnmarshalJSON(b []byte) error {
	type plain Subscription
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Subscription(p)
	s.Raw = bytes.Clone(b)
	return nil
}

// ConsumerInfo is a consumer connected to a subscription.
type ConsumerInfo struct {
	Name        string    `json:"consumer"`
	ConnectedAt time.Time `json:"connectedAt"`
	Partitions  []int     `json:"partitions"`
}

// Partition is the state of one partition of a subscription.
type Partition struct {
	Partition int `json:"partition"`
	// Position is the id up to which every matching event of the partition
	// is settled, "" before any.
	Position string `json:"position"`
	// Consumer owns the partition, "" for none.
	Consumer string `json:"consumer"`
	// Epoch rises with every move of the partition and every reset.
	Epoch    uint64 `json:"epoch"`
	InFlight int    `json:"inFlight"`
}

// ParkedEvent is an event a subscription gave up on.
type ParkedEvent struct {
	Partition int       `json:"partition"`
	Attempts  int       `json:"attempts"`
	ParkedAt  time.Time `json:"parkedAt"`
	// Reason is the reason given by the park, "" for none (parked after
	// its last attempt).
	Reason string `json:"reason"`
	Event  Event  `json:"event"`
	// Raw is the service's JSON exactly as received.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a parked event and keeps its bytes in Raw.
func (p *ParkedEvent) UnmarshalJSON(b []byte) error {
	type plain ParkedEvent
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = ParkedEvent(v)
	p.Raw = bytes.Clone(b)
	return nil
}
