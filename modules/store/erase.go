package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Erasure asks to erase the data of the events of a subject (docs/api.md
// §4.16): the writer replaces it by the erased form in the same commit as
// the management event that records the erasure.
type Erasure struct {
	// Subject, and with Recursive its descendants, are the events' subjects.
	Subject   string
	Recursive bool
	// EventTypes, unless empty, are the only types erased.
	EventTypes []string
	// UpperBound, unless nil, is the highest id erased; else the head.
	UpperBound *uint64
	// Reason says why; Token names the token that asked, "" for the
	// single token of --api-token.
	Reason string
	Token  string
}

// ErasedRecord is an event whose data an erasure replaced: its record as
// it is now, and the digest of the data it had.
type ErasedRecord struct {
	Record  event.Record
	DataSum event.DataSum
}

// DigestKeeper is implemented by backends that keep the digests of the
// original data of erased events (Batch.Erased, Written.Kept): they can
// hold erased events, restored from a backup or erased here.
type DigestKeeper interface {
	// KeptDataSum returns the digest of the original data of the erased
	// event id, false when the event was not erased.
	KeptDataSum(id uint64) (event.DataSum, bool, error)
}

// Eraser is implemented by backends that erase (Batch.Erased).
type Eraser interface {
	DigestKeeper
	// Purge removes every copy of the data that committed erasures
	// replaced from the backend's files, and returns once none is left.
	// It runs outside the writer, beside commits.
	Purge(ctx context.Context) error
}

// Errors of Erase.
var (
	// ErrErasureUnsupported refuses an erasure on a backend that cannot.
	ErrErasureUnsupported = errors.New("erasure is not supported by this storage backend")
	// ErrBeyondHead refuses an erasure whose upper bound is not an event.
	ErrBeyondHead = errors.New("upper bound beyond the head")
)

// erasedData is the data of the management event of an erasure.
type erasedData struct {
	Events     int      `json:"events"`
	FirstID    string   `json:"firstId"`
	LastID     string   `json:"lastId"`
	Recursive  bool     `json:"recursive"`
	EventTypes []string `json:"eventTypes"`
	UpperBound *string  `json:"upperBound"`
	Reason     string   `json:"reason"`
	Token      *string  `json:"token"`
}

// erasing is an erasure being decided by the writer.
type erasing struct {
	Erasure
	// The events below scanned were read before the erasure was queued:
	// pre, of the types preTypes. Only erasures change stored events, and
	// Erase runs one at a time, so the writer reads only those from
	// scanned on.
	scanned  uint64
	pre      []event.Record
	preTypes []string
	events   []event.Record // the events it erases, as they were
	types    []string       // of events
	records  []ErasedRecord // the events as they are after it
}

// Erase erases the data of the events e selects that were not erased
// before, in one commit with the management event, and returns how many
// it erased and the management event (none when it erased none) once the
// erased data is gone from the backend's files. Erasures run one at a
// time; the events durable when one starts are read before it is queued,
// so that the writer, which holds up writes while it decides, reads only
// those committed since.
func (s *Store) Erase(ctx context.Context, e Erasure) (int, *event.Record, error) {
	eraser, ok := s.backend.(Eraser)
	if !ok {
		return 0, nil, ErrErasureUnsupported
	}
	s.erasures.Lock()
	defer s.erasures.Unlock()
	x := &erasing{Erasure: e}
	durable := s.Durable()
	if e.UpperBound != nil && *e.UpperBound < durable {
		durable = *e.UpperBound + 1
	}
	var err error
	if x.pre, x.preTypes, err = x.scan(s.backend, 0, durable); err != nil {
		return 0, nil, err
	}
	x.scanned = durable
	r := Request{Events: []event.Candidate{{Source: event.ManagementSource, Subject: e.Subject, Type: event.ErasedType, Data: []byte(`{}`)}}}
	r.erase = x
	records, err := s.Commit(ctx, r)
	if err != nil {
		return 0, nil, err
	}
	// Also with nothing erased now: an erasure cut off may have left a
	// purge to do.
	if err := eraser.Purge(ctx); err != nil {
		return 0, nil, fmt.Errorf("purge the erased data: %w", err)
	}
	if len(records) == 0 {
		return 0, nil, nil
	}
	return len(x.records), &records[0], nil
}

// scan returns the events of ids from..to-1 that the erasure selects and
// that were not erased before, with their types; the records are copies.
func (x *erasing) scan(r Reader, from, to uint64) (events []event.Record, types []string, err error) {
	if from >= to {
		return nil, nil, nil
	}
	sc := jsonscan.New(nil)
	it := r.Scan(Scan{Subject: x.Subject, Recursive: x.Recursive, From: from, To: to - 1})
	defer func() { err = errors.Join(err, it.Close()) }()
	for it.Next() {
		rec := it.Record()
		m, eventType, err := splitTyped(rec, sc)
		if err != nil {
			return nil, nil, fmt.Errorf("erase: event %d: %w", rec.ID, err)
		}
		if eventType == event.ErasedType || (len(x.EventTypes) > 0 && !slices.Contains(x.EventTypes, eventType)) {
			continue
		}
		if event.IsErasedForm(m[event.MemberData]) {
			continue // erased before, or written so: nothing to erase
		}
		events = append(events, event.Record{ID: rec.ID, JSON: slices.Clone(rec.JSON)})
		types = append(types, eventType)
	}
	return events, types, nil
}

// dropErasedSince drops from the events read before the erasure was
// queued those that another erasure erased since: on a shared backend
// another node's, committed after this node read them. It looks for the
// management events committed from the first of them up to to, and reads
// the events again only when there is one.
func (x *erasing) dropErasedSince(r Reader, to uint64) error {
	if len(x.pre) == 0 {
		return nil
	}
	it := r.Scan(Scan{Type: event.ErasedType, From: x.pre[0].ID, To: to - 1})
	found := it.Next()
	if err := it.Close(); err != nil || !found {
		return err
	}
	sc := jsonscan.New(nil)
	kept, keptTypes := x.pre[:0], x.preTypes[:0]
	for i, e := range x.pre {
		now, ok, err := r.Record(e.ID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("erase: event %d is missing", e.ID)
		}
		m, err := now.Split(sc)
		if err != nil {
			return fmt.Errorf("erase: event %d: %w", e.ID, err)
		}
		if !event.IsErasedForm(m[event.MemberData]) {
			kept, keptTypes = append(kept, e), append(keptTypes, x.preTypes[i])
		}
	}
	x.pre, x.preTypes = kept, keptTypes
	return nil
}

// checkErasure decides an erasure, alone in its group, on the committed
// state: it finds the events to erase (those read before it was queued,
// and those committed since) and writes the management event (w.Events),
// none when there are none.
func (s *Store) checkErasure(w *writeRequest, g *groupState) error {
	x := w.erase
	x.records = nil
	w.Events, w.Changes = nil, nil
	if s.readOnly.Load() {
		return ErrReadOnly
	}
	to := s.head.Count
	if x.UpperBound != nil {
		if *x.UpperBound >= to {
			return ErrBeyondHead
		}
		to = *x.UpperBound + 1
	}
	tail, tailTypes, err := x.scan(s.backend, x.scanned, to)
	if err == nil {
		err = x.dropErasedSince(s.backend, to)
	}
	if err != nil {
		return &FailureError{Err: err}
	}
	x.events = append(slices.Clip(x.pre), tail...)
	x.types = append(slices.Clip(x.preTypes), tailTypes...)
	if len(x.events) == 0 {
		return nil
	}
	data := erasedData{Events: len(x.events), FirstID: fmt.Sprint(x.events[0].ID), LastID: fmt.Sprint(x.events[len(x.events)-1].ID),
		Recursive: x.Recursive, EventTypes: x.EventTypes, Reason: x.Reason}
	if data.EventTypes == nil {
		data.EventTypes = []string{}
	}
	if x.UpperBound != nil {
		bound := fmt.Sprint(*x.UpperBound)
		data.UpperBound = &bound
	}
	if x.Token != "" {
		data.Token = &x.Token
	}
	raw, err := json.Marshal(data)
	if err == nil {
		raw, err = jsonscan.Canonicalize(raw)
	}
	if err != nil {
		return err
	}
	w.Events = []event.Candidate{{Source: event.ManagementSource, Subject: x.Subject, Type: event.ErasedType, Data: raw}}
	// A build chunk read before the erasure would key the data it erases:
	// every building index's state moves on, so that the chunk's fence
	// refuses it and the build reads the chunk again.
	for _, ix := range g.indexes {
		if ix.Ready() {
			continue
		}
		rec, found, err := s.stateIn(g, DataIndexSpace, ix.Name)
		if err != nil {
			return &FailureError{Err: err}
		}
		if found {
			w.Changes = append(w.Changes, Change{Space: DataIndexSpace, Key: ix.Name, Value: rec.Value, Expect: rec.Version})
		}
	}
	return nil
}

// sealErasure replaces the data of the erasure's events by the erased form
// of its management event, sealed as w.records[0], and removes their keys
// from the data indexes.
func (g *groupState) sealErasure(w *writeRequest) error {
	x := w.erase
	if len(w.records) == 0 {
		return nil
	}
	sc := jsonscan.New(nil)
	m, err := w.records[0].Split(sc)
	var at string
	if err == nil {
		at, err = m.Text(event.MemberTime, sc)
	}
	if err != nil {
		return err
	}
	data := event.ErasedData(w.records[0].ID, at)
	var keys []dataindex.Key
	for i, r := range x.events {
		erased, sum, err := event.Erase(r, data, sc)
		if err != nil {
			return err
		}
		x.records = append(x.records, ErasedRecord{Record: erased, DataSum: sum})
		original, err := r.Split(sc)
		if err != nil {
			return err
		}
		for _, ix := range g.indexes {
			g.unposted, keys = appendPostings(g.unposted, ix, r.ID, x.types[i], original[event.MemberData], keys)
		}
	}
	g.erased = append(g.erased, x.records...)
	return nil
}
