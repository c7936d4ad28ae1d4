package eventql

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Database is the state a query reads: one consistent snapshot.
type Database interface {
	// Events calls fn for the events sel selects, in id order, until fn
	// returns false. The record is valid during the call only.
	Events(ctx context.Context, sel Selection, fn func(r event.Record) bool) error
	// Subjects calls fn for the subjects that have events and their
	// ancestors, in read-subjects order, until fn fails.
	Subjects(ctx context.Context, fn func(subject string) error) error
	// EventTypes calls fn for the event types in read-event-types order,
	// until fn fails.
	EventTypes(ctx context.Context, fn func(EventType) error) error
	// Emit appends an event's complete JSON form, signature included.
	Emit(dst []byte, r event.Record) []byte
}

// EventType is an event type as the eventtypes source lists it.
type EventType struct {
	Name    string
	Phantom bool
	Schema  []byte // nil when no schema is registered
}

// Selection tells which events a source reads: the union of Lookups (all
// events when there are none) with ids From..To, both inclusive.
type Selection struct {
	Lookups    []Lookup
	From, To   uint64
	Descending bool
}

// Lookup selects events by the indexes: of exactly Type, of exactly
// Subject, of both, or whose subject starts with SubjectPrefix.
type Lookup struct {
	Type          string
	Subject       string
	SubjectPrefix string
}

// eventFieldNames are the fields of a stored record, in their order.
var eventFieldNames = []string{"source", "subject", "type", "traceparent", "tracestate", "specversion", "id", "time", "datacontenttype", "predecessorhash", "data", "hash"}

const (
	fieldTraceparent = 3
	fieldTracestate  = 4
	fieldTime        = 7
	fieldData        = 10
	fieldHash        = 11
)

// hashSuffix starts the last member of a stored record, after data: the
// hash, a string of 64 hex digits.
var hashSuffix = []byte(`,"hash":`)

// hashMemberLength is the length of the hash member with its comma.
var hashMemberLength = len(hashSuffix) + 66

// eventData is an event read from the store. Its fields are found by one
// scan over the stored JSON, on first use; data stays raw JSON. The
// executor reuses one eventData per loop for every event it reads; a value
// that outlives the read is retained (copied) first.
type eventData struct {
	rec    event.Record
	db     Database
	sc     *jsonscan.Scanner // shared by the execution
	parsed bool
	raw    [12][]byte
}

// errParsed ends the scan of a record at its data.
var errParsed = errors.New("parsed")

func (e *eventData) parse() {
	if e.parsed {
		return
	}
	e.parsed = true
	if e.sc == nil {
		e.sc = jsonscan.New(nil)
	}
	sc, rec := e.sc, e.rec.JSON
	sc.Reset(rec)
	defer sc.Reset(nil)
	_ = sc.RecordPrefix(func(key []byte) error {
		if string(key) == "data" {
			// The hash is the last member: data ends where it starts,
			// which saves scanning through data.
			if end := len(rec) - hashMemberLength; end > sc.Offset() && bytes.HasPrefix(rec[end:], hashSuffix) {
				e.raw[fieldData], e.raw[fieldHash] = rec[sc.Offset():end], rec[end+len(hashSuffix):]
				return errParsed
			}
		}
		raw, err := sc.Raw()
		for i, name := range eventFieldNames {
			if string(key) == name {
				e.raw[i] = raw
				break
			}
		}
		return err
	})
}

func (e *eventData) field(name string) Value {
	switch name {
	case "id":
		return String(strconv.FormatUint(e.rec.ID, 10))
	case "signature":
		return e.signature()
	}
	e.parse()
	for i, n := range eventFieldNames {
		if n != name {
			continue
		}
		raw := e.raw[i]
		switch {
		case raw == nil:
			return Null
		case i == fieldTime:
			t, err := event.ParseTime(jsonValue(raw).s)
			if err != nil {
				return Null
			}
			return dateTime(t)
		}
		return jsonValue(raw)
	}
	return Null
}

// signature is the signature of the event as emitted, or null.
func (e *eventData) signature() Value {
	full := e.db.Emit(nil, e.rec)
	const key = `,"signature":`
	i := bytes.LastIndex(full, []byte(key))
	if i < 0 {
		return Null
	}
	return jsonValue(full[i+len(key) : len(full)-1])
}

// record returns the event as a record of its output fields.
func (e *eventData) record() *record {
	r := &record{}
	for _, name := range append(append([]string(nil), eventFieldNames...), "signature") {
		v := e.field(name)
		if v.isNull() && (name == "traceparent" || name == "tracestate") {
			continue
		}
		r.keys = append(r.keys, name)
		r.vals = append(r.vals, v)
	}
	return r
}

func (e *eventData) appendJSON(dst []byte) []byte { return e.db.Emit(dst, e.rec) }

// size is the length of the event's complete JSON, about.
func (e *eventData) size() int { return len(e.rec.JSON) + 150 }

// retain returns a copy of v that stays valid after the record or data it
// was read from is gone.
func retain(v Value) Value {
	switch {
	case v.raw != nil:
		v.raw = bytes.Clone(v.raw)
	case v.ev != nil:
		ev := &eventData{rec: event.Record{ID: v.ev.rec.ID, JSON: bytes.Clone(v.ev.rec.JSON)}, db: v.ev.db, sc: v.ev.sc}
		v.ev = ev
	case v.kind == KindArray:
		elems := make([]Value, len(v.arr))
		for i, e := range v.arr {
			elems[i] = retain(e)
		}
		v.arr = elems
	case v.kind == KindRecord && v.rec != nil:
		vals := make([]Value, len(v.rec.vals))
		for i, e := range v.rec.vals {
			vals[i] = retain(e)
		}
		v.rec = &record{keys: v.rec.keys, vals: vals, fold: v.rec.fold}
	}
	return v
}

func subjectValue(s string) Value {
	return Record([]string{"subject"}, []Value{String(s)})
}

func eventTypeValue(t EventType) Value {
	r := &record{keys: []string{"eventType", "isPhantom"}, vals: []Value{String(t.Name), Bool(t.Phantom)}, fold: true}
	if t.Schema != nil {
		r.keys = append(r.keys, "schema")
		r.vals = append(r.vals, jsonValue(t.Schema))
	}
	return Value{kind: KindRecord, rec: r}
}
