package envelope

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// Source is the publisher of every management event.
const Source = "https://github.com/eventstore-service/eventstore"

// Types of management events. The vendor segment eventsourcingdb is what the
// EventSourcingDB client SDKs check.
const (
	TypePingReceived          = "io.eventsourcingdb.api.ping-received"
	TypeAPITokenVerified      = "io.eventsourcingdb.api.api-token-verified"
	TypeEventSchemaRegistered = "io.eventsourcingdb.api.event-schema-registered"
	TypeReadOnlyModeEntered   = "io.eventsourcingdb.api.read-only-mode-entered"
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

// Handler returns a handler that answers with the management event of
// eventType for path, and data (nil: the empty object).
func (b *Builder) Handler(path, eventType string, data any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpkit.WriteJSON(w, b.New(path, eventType, data))
	})
}
