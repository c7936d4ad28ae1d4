package eventql

import (
	"bytes"
	"context"
	"strconv"

	"github.com/eventstore-service/eventstore/modules/dataindex"
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
// events when there are none), or the events with any of DataKeys, each
// within its own ids, in the data index DataIndex (when not 0); with ids
// From..To, both inclusive.
type Selection struct {
	Lookups    []Lookup
	DataIndex  uint64
	DataKeys   []dataindex.Lookup
	From, To   uint64
	Descending bool
}

// DataIndex is a ready data index (docs/api.md §4.15) that a Database
// offers the planner: its id (Selection.DataIndex), the JSON pointer of its
// values, and the event types it covers (nil: all).
type DataIndex struct {
	ID         uint64
	Path       string
	EventTypes []string
}

// DataIndexed is implemented by a Database that offers data indexes: a
// run plans with those ready as it starts.
type DataIndexed interface {
	DataIndexes() []DataIndex
}

// Lookup selects events by the indexes: of exactly Type, of exactly
// Subject, of both, or whose subject starts with SubjectPrefix.
type Lookup struct {
	Type          string
	Subject       string
	SubjectPrefix string
}

// eventData is an event read from the store. Its members are found by one
// pass over the stored JSON, on first use; data stays raw JSON. The
// executor reuses one eventData per loop for every event it reads; a value
// that outlives the read is retained (copied) first.
type eventData struct {
	rec    event.Record
	db     Database
	sc     *jsonscan.Scanner // shared by the execution
	parsed bool
	raw    event.Members
}

func (e *eventData) parse() {
	if e.parsed {
		return
	}
	e.parsed = true
	if e.sc == nil {
		e.sc = jsonscan.New(nil)
	}
	// A damaged record yields the members before the damage; the others
	// read as null.
	e.raw, _ = e.rec.Split(e.sc)
}

func (e *eventData) field(name string) Value {
	switch name {
	case "id":
		return String(strconv.FormatUint(e.rec.ID, 10))
	case "signature":
		return e.signature()
	}
	m, ok := event.MemberNamed(name)
	if !ok {
		return Null
	}
	return e.member(m)
}

// member returns the value of a stored member.
func (e *eventData) member(m event.Member) Value {
	e.parse()
	raw := e.raw[m]
	switch {
	case raw == nil:
		return Null
	case m == event.MemberTime:
		t, err := event.ParseTime(jsonValue(raw).s)
		if err != nil {
			return Null
		}
		return dateTime(t)
	}
	return jsonValue(raw)
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
	for m := range event.Member(event.NumMembers) {
		v := e.field(m.Name())
		if v.isNull() && m.Optional() {
			continue
		}
		r.keys = append(r.keys, m.Name())
		r.vals = append(r.vals, v)
	}
	r.keys = append(r.keys, "signature")
	r.vals = append(r.vals, e.signature())
	return r
}

func (e *eventData) appendJSON(dst []byte) []byte { return e.db.Emit(dst, e.rec) }

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
