package storedb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/store"
)

// cancelCheck is how many records pass between checks of the context.
const cancelCheck = 256

// DB is an eventql.Database over one view of the store.
type DB struct {
	view    *store.View
	emitter *event.Emitter
	indexes []*store.DataIndex // those DataIndexes offered
}

// New returns the database of view; emitter writes whole events.
func New(view *store.View, emitter *event.Emitter) *DB {
	return &DB{view: view, emitter: emitter}
}

// DataIndexes returns the ready data indexes of the store; none when they
// cannot be read (the query then scans).
func (db *DB) DataIndexes() []eventql.DataIndex {
	ready, err := db.view.DataIndexes()
	if err != nil {
		return nil
	}
	out := make([]eventql.DataIndex, len(ready))
	for i, x := range ready {
		out[i] = eventql.DataIndex{ID: x.ID, Path: x.Path, EventTypes: x.EventTypes}
	}
	db.indexes = ready
	return out
}

// ErrDataIndexRemoved ends a read of a data index that was removed while
// it read: its keys went with it.
var ErrDataIndexRemoved = errors.New("a data index the query read was removed meanwhile")

// scans returns the store scans whose union sel selects.
func scans(sel eventql.Selection) []store.Scan {
	base := store.Scan{From: sel.From, To: sel.To, Descending: sel.Descending}
	if sel.DataIndex != 0 {
		base.DataIndex, base.DataKeys = sel.DataIndex, sel.DataKeys
		return []store.Scan{base}
	}
	if len(sel.Lookups) == 0 {
		return []store.Scan{base}
	}
	out := make([]store.Scan, len(sel.Lookups))
	for i, l := range sel.Lookups {
		out[i] = base
		if l.SubjectPrefix != "" {
			out[i].SubjectPrefix = l.SubjectPrefix
		} else {
			out[i].Subject, out[i].Type = l.Subject, l.Type
		}
	}
	return out
}

// Events calls fn for the selected events in id order, merging the scans
// of a union without duplicates. A read of a data index fails with
// ErrDataIndexRemoved when the index was removed before it ended.
func (db *DB) Events(ctx context.Context, sel eventql.Selection, fn func(event.Record) bool) (err error) {
	if sel.From > sel.To {
		return nil
	}
	if sel.DataIndex != 0 {
		i := slices.IndexFunc(db.indexes, func(x *store.DataIndex) bool { return x.ID == sel.DataIndex })
		if i < 0 {
			return fmt.Errorf("data index %d: %w", sel.DataIndex, ErrDataIndexRemoved)
		}
		x := db.indexes[i]
		defer func() {
			if err == nil {
				var stands bool
				stands, err = db.view.DataIndexStands(x)
				if err == nil && !stands {
					err = fmt.Errorf("data index %s: %w", x.Name, ErrDataIndexRemoved)
				}
			}
		}()
	}
	var cursors []store.RecordIterator
	var valid []bool
	defer func() {
		for _, it := range cursors {
			err = errors.Join(err, it.Close())
		}
	}()
	for _, sc := range scans(sel) {
		it := db.view.Scan(sc)
		cursors = append(cursors, it)
		valid = append(valid, it.Next())
	}
	for n := 1; ; n++ {
		if n%cancelCheck == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		best := -1
		for i, it := range cursors {
			if !valid[i] {
				continue
			}
			if best < 0 || (it.Record().ID < cursors[best].Record().ID) != sel.Descending {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		id := cursors[best].Record().ID
		if !fn(cursors[best].Record()) {
			return nil
		}
		for i, it := range cursors {
			if valid[i] && it.Record().ID == id {
				valid[i] = it.Next()
			}
		}
	}
}

// Subjects calls fn for the subjects of the view in read-subjects order.
func (db *DB) Subjects(ctx context.Context, fn func(string) error) error {
	n := 0
	return db.view.Subjects(func(s string) error {
		if n++; n%cancelCheck == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(s)
	})
}

// EventTypes calls fn for the event types of the view in name order.
func (db *DB) EventTypes(ctx context.Context, fn func(eventql.EventType) error) error {
	types, err := db.view.EventTypes()
	if err != nil {
		return err
	}
	for _, t := range types {
		et := eventql.EventType{Name: t.Name, Phantom: t.Phantom}
		if t.Schema != nil {
			et.Schema = t.Schema.Raw
		}
		if err := fn(et); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Emit appends the complete JSON of r, signature included.
func (db *DB) Emit(dst []byte, r event.Record) []byte { return db.emitter.Append(dst, r) }

// Condition is an isEventQlQueryTrue precondition of one write: an EventQL
// program, evaluated on the durable state as often as the write needs
// (store.Condition), all evaluations together within the time limit of
// its options, which counts from the first.
type Condition struct {
	program  *eventql.Program
	emitter  *event.Emitter
	opts     eventql.Options
	affecter *eventql.Affecter // of the last evaluation
}

// NewCondition returns the precondition that program holds, evaluated
// with opts (its memory and time limits).
func NewCondition(program *eventql.Program, emitter *event.Emitter, opts eventql.Options) *Condition {
	return &Condition{program: program, emitter: emitter, opts: opts}
}

// Holds evaluates the program on state as docs/eventql.md §13 says.
func (c *Condition) Holds(ctx context.Context, state *store.View) (bool, error) {
	if c.opts.Since.IsZero() {
		c.opts.Since = time.Now()
	}
	db := New(state, c.emitter)
	opts := c.opts
	opts.Turn = func() error { return state.WaitTurn(ctx) }
	c.affecter = nil
	opts.Affecter = func(a *eventql.Affecter) { c.affecter = a }
	return c.program.Holds(ctx, db, opts)
}

// Affects reports whether writing w could change the verdict of the last
// evaluation: whether the query, as that evaluation planned it, reads w
// (eventql.Affecter).
func (c *Condition) Affects(w store.Written) bool {
	if c.affecter == nil { // no evaluation ran: as without data indexes
		c.affecter = c.program.Affecter(c.emitter.Append)
	}
	return c.affecter.Affects(eventql.Written{Record: w.Record, Subject: w.Subject, Type: w.Type, Keyed: w.Keyed})
}

// ReadsSchemas reports whether the program reads registered schemas.
func (c *Condition) ReadsSchemas() bool { return c.program.ReadsSchemas() }
