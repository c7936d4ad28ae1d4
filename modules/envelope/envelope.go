package envelope

import (
	"time"

	"github.com/google/uuid"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Source is the publisher of every management event.
const Source = "https://github.com/eventstore-service/eventstore"

// Types of management events. The vendor segment eventsourcingdb is what the
// EventSourcingDB client SDKs check.
const (
	TypePingReceived          = "io.eventsourcingdb.api.ping-received"
	TypeAPITokenVerified      = "io.eventsourcingdb.api.api-token-verified"
	TypeEventSchemaRegistered = "io.eventsourcingdb.api.event-schema-registered"
)

// Event is a management event; its JSON form has exactly these keys in this order.
type Event struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Time            string `json:"time"`
	Source          string `json:"source"`
	Subject         string `json:"subject"`
	Type            string `json:"type"`
	DataContentType string `json:"datacontenttype"`
	Data            any    `json:"data"`
}

// Builder creates management events.
type Builder struct {
	now func() time.Time
}

// NewBuilder returns a Builder that stamps events with the wall clock.
func NewBuilder() *Builder { return &Builder{now: time.Now} }

// New returns a management event answering the request path subject.
// A nil data is sent as the empty object.
func (b *Builder) New(subject, eventType string, data any) Event {
	if data == nil {
		data = struct{}{}
	}
	return Event{
		SpecVersion:     "1.0",
		ID:              uuid.NewString(),
		Time:            event.FormatTime(b.now()),
		Source:          Source,
		Subject:         subject,
		Type:            eventType,
		DataContentType: "application/json",
		Data:            data,
	}
}
