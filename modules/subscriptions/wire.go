package subscriptions

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/names"
)

// WireOptions are a subscription's options in their JSON form (api.md
// §4.14), as create-subscription takes them, read-subscription shows them
// and backups keep them. Absent members take their defaults.
type WireOptions struct {
	Recursive          bool            `json:"recursive"`
	EventTypes         []string        `json:"eventTypes"`
	Start              json.RawMessage `json:"start"`
	Partitions         *int            `json:"partitions"`
	MaxInFlight        *int            `json:"maxInFlight"`
	AcknowledgeTimeout *string         `json:"acknowledgeTimeout"`
	MaxDeliveries      *int            `json:"maxDeliveries"`
}

// OptionNames are the members of WireOptions.
var OptionNames = []string{"recursive", "eventTypes", "start", "partitions", "maxInFlight", "acknowledgeTimeout", "maxDeliveries"}

// WireError is a definition, option or start that cannot be read; its
// message is the whole answer of api.md §4.14 (for example
// "invalid event type: 'x'").
type WireError struct{ Message string }

// Error returns the message.
func (e *WireError) Error() string { return e.Message }

func wireErrorf(format string, args ...any) error {
	return &WireError{Message: fmt.Sprintf(format, args...)}
}

// ParseDefinition returns the definition of subscription name on subject
// with the options w, checked; its errors are *WireError.
func ParseDefinition(name, subject string, w WireOptions) (Definition, error) {
	if !names.Valid(name) {
		return Definition{}, wireErrorf("invalid request: invalid name %s", event.Quote(name))
	}
	if !event.ValidSubject(subject) {
		return Definition{}, wireErrorf("invalid subject: %s", event.Quote(subject))
	}
	d := Definition{Name: name, Subject: subject, Options: Defaults()}
	d.Options.Recursive = w.Recursive
	if w.EventTypes != nil {
		for _, t := range w.EventTypes {
			if !event.ValidType(t) {
				return Definition{}, wireErrorf("invalid event type: %s", event.Quote(t))
			}
		}
		d.Options.EventTypes = w.EventTypes
	}
	var err error
	if d.Options.Start, err = ParseStart(w.Start); err != nil {
		return Definition{}, err
	}
	for _, n := range []struct {
		from *int
		into *int
	}{{w.Partitions, &d.Options.Partitions}, {w.MaxInFlight, &d.Options.MaxInFlight}, {w.MaxDeliveries, &d.Options.MaxDeliveries}} {
		if n.from != nil {
			*n.into = *n.from
		}
	}
	if w.AcknowledgeTimeout != nil {
		if d.Options.AcknowledgeTimeout, err = time.ParseDuration(*w.AcknowledgeTimeout); err != nil {
			return Definition{}, wireErrorf("invalid request: acknowledgeTimeout %s is no duration", event.Quote(*w.AcknowledgeTimeout))
		}
	}
	if err := d.Validate(); err != nil {
		return Definition{}, wireErrorf("invalid request: %v", err)
	}
	return d, nil
}

// ParseStart reads a start in its JSON form: "beginning" (also absent or
// null), "end" or {"afterEventId":"<id>"}; its errors are *WireError.
func ParseStart(raw json.RawMessage) (Start, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Start{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "beginning":
			return Start{}, nil
		case "end":
			return Start{Kind: FromEnd}, nil
		}
		return Start{}, wireErrorf("invalid request: unknown start %s, expected 'beginning', 'end' or {\"afterEventId\":…}", event.Quote(s))
	}
	var after struct {
		AfterEventID *string `json:"afterEventId"`
	}
	if err := json.Unmarshal(raw, &after); err != nil || after.AfterEventID == nil {
		return Start{}, wireErrorf("invalid request: start must be 'beginning', 'end' or {\"afterEventId\":…}")
	}
	id, ok := event.ParseID(*after.AfterEventID)
	if !ok {
		return Start{}, wireErrorf("invalid event id: %s", event.Quote(*after.AfterEventID))
	}
	return Start{Kind: AfterEvent, EventID: id}, nil
}

// Wire returns the JSON form of s.
func (s Start) Wire() json.RawMessage {
	switch s.Kind {
	case FromEnd:
		return json.RawMessage(`"end"`)
	case AfterEvent:
		return json.RawMessage(`{"afterEventId":"` + strconv.FormatUint(s.EventID, 10) + `"}`)
	}
	return json.RawMessage(`"beginning"`)
}

// Wire returns every option of o, effective, in its JSON form.
func (o Options) Wire() WireOptions {
	timeout := o.AcknowledgeTimeout.String()
	partitions, window, deliveries := o.Partitions, o.MaxInFlight, o.MaxDeliveries
	return WireOptions{Recursive: o.Recursive, EventTypes: o.EventTypes, Start: o.Start.Wire(), Partitions: &partitions,
		MaxInFlight: &window, AcknowledgeTimeout: &timeout, MaxDeliveries: &deliveries}
}
