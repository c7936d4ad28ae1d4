package backup

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// fields are the members of a backup's event, as read.
type fields struct {
	specVersion, id, time, source, subject, eventType, contentType string
	traceParent, traceState, predecessorHash, hash                 string
	data                                                           []byte
}

// event reads and proves the payload of an event line and returns the
// event as the store keeps it.
func (r *Reader) event(payload []byte) (*store.Written, error) {
	f, err := r.fields(payload)
	if err != nil {
		return nil, fmt.Errorf("malformed event line: %w", err)
	}
	if err := r.validate(&f); err != nil {
		return nil, err
	}
	t, err := event.ParseTime(f.time)
	if err != nil || event.FormatTime(t) != f.time {
		return nil, fmt.Errorf("invalid time: %s", event.Quote(f.time))
	}
	if f.time <= r.prevTime { // one fixed-width format: string order is time order
		return nil, fmt.Errorf("time %s is not after the time %s of the event before", f.time, r.prevTime)
	}
	if f.predecessorHash != string(r.prevHash) {
		return nil, fmt.Errorf("predecessorhash %s is not the hash %s of the event before", f.predecessorHash, r.prevHash)
	}
	c := event.Candidate{Source: f.source, Subject: f.subject, Type: f.eventType, Data: f.data, TraceParent: f.traceParent, TraceState: f.traceState}
	var rec event.Record
	r.record, rec = event.Seal(r.record[:0], c, r.next, t, r.prevHash)
	if got := rec.Hash(); got != f.hash {
		return nil, fmt.Errorf("hash %s does not match the event, whose hash is %s", f.hash, got)
	}
	r.next++
	r.prevHash, r.prevTime = append(r.prevHash[:0], f.hash...), f.time
	return &store.Written{Record: rec, Subject: f.subject, Type: f.eventType}, nil
}

// validate applies the rules of write-events and the fixed members.
func (r *Reader) validate(f *fields) error {
	id, ok := event.ParseID(f.id)
	switch {
	case !ok:
		return fmt.Errorf("invalid event id: %s", event.Quote(f.id))
	case id != r.next:
		return fmt.Errorf("event %d where event %d was due", id, r.next)
	case f.specVersion != event.SpecVersion:
		return fmt.Errorf("specversion %s, want '%s'", event.Quote(f.specVersion), event.SpecVersion)
	case f.contentType != event.DataContentType:
		return fmt.Errorf("datacontenttype %s, want '%s'", event.Quote(f.contentType), event.DataContentType)
	case !event.ValidSource(f.source):
		return fmt.Errorf("invalid source: %s", event.Quote(f.source))
	case !event.ValidSubject(f.subject):
		return fmt.Errorf("invalid subject: %s", event.Quote(f.subject))
	case !event.ValidType(f.eventType):
		return fmt.Errorf("invalid event type: %s", event.Quote(f.eventType))
	case f.traceParent != "" && !event.ValidTraceParent(f.traceParent):
		return fmt.Errorf("invalid traceparent: %s", event.Quote(f.traceParent))
	case f.traceState != "" && f.traceParent == "":
		return errors.New("invalid tracestate: tracestate requires traceparent")
	case len(f.traceState) > event.MaxTraceStateLength:
		return fmt.Errorf("invalid tracestate: longer than %d bytes", event.MaxTraceStateLength)
	case len(f.data) == 0 || f.data[0] != '{':
		return errors.New("invalid data: data must be a JSON object")
	case r.maxEventSize > 0 && int64(len(f.data)) > r.maxEventSize:
		return fmt.Errorf("invalid data: event data exceeds the limit of %d bytes", r.maxEventSize)
	}
	canonical, err := jsonscan.Canonicalize(f.data)
	switch {
	case err != nil:
		return fmt.Errorf("invalid data: %v", err)
	case !bytes.Equal(canonical, f.data):
		return errors.New("invalid data: not in canonical form (sorted keys, compact), so its hash cannot be the store's")
	}
	return nil
}

// fields reads the members of an event line's payload.
func (r *Reader) fields(payload []byte) (fields, error) {
	var f fields
	strings := map[string]*string{
		"specversion": &f.specVersion, "id": &f.id, "time": &f.time, "source": &f.source, "subject": &f.subject,
		"type": &f.eventType, "datacontenttype": &f.contentType, "traceparent": &f.traceParent,
		"tracestate": &f.traceState, "predecessorhash": &f.predecessorHash,
	}
	r.sc.Reset(payload)
	err := r.sc.Object(func(key string) error {
		switch key {
		case "hash":
			var err error
			f.hash, _, err = r.sc.String()
			return err
		case "event":
			return r.sc.Object(func(key string) error {
				if key == "data" {
					raw, err := r.sc.Raw()
					f.data = raw
					return err
				}
				dst := strings[key]
				if dst == nil {
					return fmt.Errorf("unknown member %q of the event", key)
				}
				var err error
				*dst, _, err = r.sc.String()
				return err
			})
		}
		return fmt.Errorf("unknown member %q", key)
	})
	return f, err
}
