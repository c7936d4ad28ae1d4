package backup

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// fields are the members of a backup's event, as read. The byte members
// are buffers of the Reader, reused from line to line.
type fields struct {
	specVersion, id, time, contentType, predecessorHash, hash []byte
	dataHash                                                  []byte // of an erased event, else empty
	source, subject, eventType, traceParent, traceState       string
	data                                                      []byte // a slice of the line
}

// event proves the members of an event line and returns the event as the
// store keeps it.
func (r *Reader) event(f *fields) (*store.Written, error) {
	if err := r.validate(f); err != nil {
		return nil, err
	}
	t, err := event.ParseTime(string(f.time))
	if err != nil || event.FormatTime(t) != string(f.time) {
		return nil, fmt.Errorf("invalid time: %s", event.Quote(string(f.time)))
	}
	if string(f.time) <= r.prevTime { // one fixed-width format: string order is time order
		return nil, fmt.Errorf("time %s is not after the time %s of the event before", f.time, r.prevTime)
	}
	if !bytes.Equal(f.predecessorHash, r.prevHash) {
		return nil, fmt.Errorf("predecessorhash %s is not the hash %s of the event before", f.predecessorHash, r.prevHash)
	}
	c := event.Candidate{Source: f.source, Subject: f.subject, Type: f.eventType, Data: f.data, TraceParent: f.traceParent, TraceState: f.traceState}
	var rec event.Record
	var kept *event.DataSum
	if len(f.dataHash) == 0 {
		r.record, rec = event.Seal(r.record[:0], c, r.next, t, r.prevHash)
	} else {
		// An erased event: its hash covers the digest of its original data.
		var sum event.DataSum
		if n, err := hex.Decode(sum[:], f.dataHash); err != nil || n != len(sum) || len(f.dataHash) != 2*len(sum) {
			return nil, fmt.Errorf("invalid dataHash: %s", event.Quote(string(f.dataHash)))
		}
		if !event.IsErased(f.data) {
			return nil, errors.New("dataHash on an event whose data is not the erased form")
		}
		r.record, rec = event.SealKept(r.record[:0], c, r.next, t, r.prevHash, sum)
		kept = &sum
	}
	if got := rec.Hash(); got != string(f.hash) {
		return nil, fmt.Errorf("hash %s does not match the event, whose hash is %s", f.hash, got)
	}
	r.next++
	r.prevHash, r.prevTime = append(r.prevHash[:0], f.hash...), string(f.time)
	return &store.Written{Record: rec, Subject: f.subject, Type: f.eventType, Kept: kept}, nil
}

// validate applies the rules of write-events and the fixed members.
func (r *Reader) validate(f *fields) error {
	id, ok := event.ParseID(string(f.id))
	switch {
	case !ok:
		return fmt.Errorf("invalid event id: %s", event.Quote(string(f.id)))
	case id != r.next:
		return fmt.Errorf("event %d where event %d was due", id, r.next)
	case string(f.specVersion) != event.SpecVersion:
		return fmt.Errorf("specversion %s, want '%s'", event.Quote(string(f.specVersion)), event.SpecVersion)
	case string(f.contentType) != event.DataContentType:
		return fmt.Errorf("datacontenttype %s, want '%s'", event.Quote(string(f.contentType)), event.DataContentType)
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
	case !bytes.Equal(r.canonical, f.data):
		return errors.New("invalid data: not in canonical form (sorted keys, compact), so its hash cannot be the store's")
	}
	return nil
}

// fields reads the payload of an event line at the scanner's position into
// the Reader's reused fields; the data is brought to canonical form in the
// same pass, into r.canonical.
func (r *Reader) fields() (*fields, error) {
	f := &r.f
	f.source, f.subject, f.eventType, f.traceParent, f.traceState, f.data = "", "", "", "", "", nil
	for _, b := range []*[]byte{&f.specVersion, &f.id, &f.time, &f.contentType, &f.predecessorHash, &f.hash, &f.dataHash} {
		*b = (*b)[:0]
	}
	var dataErr error
	err := r.sc.ObjectBytes(func(key []byte) error {
		switch string(key) {
		case "hash":
			return r.bytesMember(&f.hash)
		case "dataHash":
			return r.bytesMember(&f.dataHash)
		case "event":
			return r.sc.ObjectBytes(func(key []byte) error {
				switch string(key) {
				case "data":
					if dataErr = r.data(f); dataErr != nil {
						return errStop
					}
					return nil
				case "specversion":
					return r.bytesMember(&f.specVersion)
				case "id":
					return r.bytesMember(&f.id)
				case "time":
					return r.bytesMember(&f.time)
				case "datacontenttype":
					return r.bytesMember(&f.contentType)
				case "predecessorhash":
					return r.bytesMember(&f.predecessorHash)
				case "source":
					return r.stringMember(&f.source)
				case "subject":
					return r.stringMember(&f.subject)
				case "type":
					return r.stringMember(&f.eventType)
				case "traceparent":
					return r.stringMember(&f.traceParent)
				case "tracestate":
					return r.stringMember(&f.traceState)
				}
				return fmt.Errorf("unknown member %q of the event", key)
			})
		}
		return fmt.Errorf("unknown member %q", key)
	})
	var syntax *jsonscan.SyntaxError
	switch {
	case err == errStop && errors.As(dataErr, &syntax):
		return nil, fmt.Errorf("malformed event line: %w", dataErr)
	case err == errStop:
		return nil, fmt.Errorf("invalid data: %w", dataErr)
	case err != nil:
		return nil, fmt.Errorf("malformed event line: %w", err)
	}
	return f, nil
}

// data reads the data of an event: its bytes as written, and its canonical
// form into r.canonical.
func (r *Reader) data(f *fields) error {
	if r.sc.Peek() != jsonscan.KindObject {
		_, err := r.sc.Raw()
		f.data = nil // validate refuses it
		return err
	}
	start := r.sc.Offset()
	var err error
	r.canonical, err = r.sc.Canonical(r.canonical[:0])
	f.data = r.sc.Rest(start)[:r.sc.Offset()-start]
	return err
}

// bytesMember reads a string member into *dst.
func (r *Reader) bytesMember(dst *[]byte) error {
	b, err := r.sc.StringBytes()
	*dst = append((*dst)[:0], b...)
	return err
}

// stringMember reads a string member into *dst; null reads as "".
func (r *Reader) stringMember(dst *string) error {
	var err error
	*dst, _, err = r.sc.String()
	return err
}
