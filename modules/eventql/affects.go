package eventql

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
)

// Written describes an event written after the state a program ran on.
type Written struct {
	Record  event.Record
	Subject string
	Type    string
	// Keyed are the keys data indexes gave the event at its commit, where
	// known: a selection through one of them selects the event only if it
	// has one of the selection's keys.
	Keyed []dataindex.Keyed
}

// Affects reports whether writing w could change what the program yields:
// whether some events source of the query, at any level, selects it (its
// index lookups and id range) and the WHERE conjuncts that read only that
// source do not rule it out. An event no source admits never reaches a row,
// so the result stands. Subjects and event types sources are affected by
// every event. In doubt (a conjunct that fails or draws random numbers) it
// answers true. emit writes an event's complete JSON, as the database of a
// run does.
func (p *Program) Affects(w Written, emit func(dst []byte, r event.Record) []byte) bool {
	return p.Affecter(emit).Affects(w)
}

// Affecter answers Affects for the events written after one run of a
// program: a run that planned with the data indexes it is made with
// selects an event through one of them only if the event has one of the
// selection's keys, which an event keyed at its commit tells (Written.Keyed)
// without a look at its data. It is not safe for concurrent use.
type Affecter struct {
	q    *Query
	data []levelPlan // of each level, as the run planned it with the indexes
	ex   *execution
}

// Affecter returns the Affecter of a run without data indexes; a run
// with them hands over its own (Options.Affecter). emit writes an event's
// complete JSON, as the database of a run does.
func (p *Program) Affecter(emit func(dst []byte, r event.Record) []byte) *Affecter {
	return newAffecter(p.q, emit, nil)
}

// newAffecter returns the Affecter of q for a run that planned each level
// with data (nil: without data indexes; a level missing from it is
// treated as if it read none).
func newAffecter(q *Query, emit func(dst []byte, r event.Record) []byte, data []levelPlan) *Affecter {
	return &Affecter{q: q, data: data, ex: &execution{ctx: context.Background(), db: emitOnly(emit)}}
}

// Affects reports whether writing w could change what the run yielded
// (Program.Affects).
func (a *Affecter) Affects(w Written) bool {
	a.ex.now = time.Time{} // NOW() reads the clock once, if at all
	return a.ex.affects(a.q, w, a.data)
}

// ReadsSchemas reports whether the program reads registered schemas (an
// event types source), which a schema registration then changes.
func (p *Program) ReadsSchemas() bool { return readsSchemas(p.q) }

func readsSchemas(q *Query) bool {
	for _, f := range q.Froms {
		if f.Kind == SourceEventTypes || f.Kind == SourceQuery && readsSchemas(f.Sub) {
			return true
		}
	}
	return false
}

// levelPlan is the selections a run planned one level with.
type levelPlan struct {
	q          *Query
	selections []Selection
}

// plannedOf returns the selections of level q in plans, nil when it has
// none: the few levels of a query are looked for one by one.
func plannedOf(plans []levelPlan, q *Query) []Selection {
	for _, p := range plans {
		if p.q == q {
			return p.selections
		}
	}
	return nil
}

func (ex *execution) affects(q *Query, w Written, data []levelPlan) bool {
	for slot, f := range q.Froms {
		switch f.Kind {
		case SourceSubjects, SourceEventTypes:
			return true
		case SourceQuery:
			if ex.affects(f.Sub, w, data) {
				return true
			}
		case SourceEvents:
			planned := plannedOf(data, q)
			if selects(q.plan.selections[slot], w) && (planned == nil || keyed(planned[slot], w)) && ex.admits(q, slot, w) {
				return true
			}
		}
	}
	return false
}

// selects reports whether a selection reads the event.
func selects(sel Selection, w Written) bool {
	if w.Record.ID < sel.From || w.Record.ID > sel.To {
		return false
	}
	if len(sel.Lookups) == 0 {
		return true
	}
	for _, l := range sel.Lookups {
		switch {
		case l.SubjectPrefix != "":
			if strings.HasPrefix(w.Subject, l.SubjectPrefix) {
				return true
			}
		case (l.Subject == "" || l.Subject == w.Subject) && (l.Type == "" || l.Type == w.Type):
			return true
		}
	}
	return false
}

// keyed reports whether a selection may read w by the keys a data index
// gave it: true unless the selection reads a data index that keyed w at
// its commit, and none of the selection's lookups reads w's keys.
func keyed(sel Selection, w Written) bool {
	if sel.DataIndex == 0 {
		return true
	}
	match, known := dataindex.Reads(sel.DataKeys, sel.DataIndex, w.Keyed, w.Record.ID)
	return match || !known
}

// admits reports whether every WHERE conjunct of q that reads only the
// alias in slot may hold for the event bound to it.
func (ex *execution) admits(q *Query, slot int, w Written) bool {
	tuple := make([]Value, len(q.Froms))
	tuple[slot] = Value{kind: KindRecord, ev: &eventData{rec: w.Record, db: ex.db, sc: &ex.scanner}}
	en := &env{tuple: tuple}
	for _, c := range q.plan.conditions {
		if !readsOnly(c, slot) {
			continue
		}
		v, err := ex.eval(c, en)
		if err == nil && (v.isNull() || v.kind == KindBool && !v.bool()) {
			return false // this conjunct drops every row the event is in
		}
	}
	return true
}

// readsOnly reports whether e reads the alias in slot and no other, and
// draws no random numbers.
func readsOnly(e Expr, slot int) bool {
	reads, others := false, false
	walk(e, func(x Expr) {
		switch x := x.(type) {
		case *AliasRef:
			if x.slot == slot {
				reads = true
			} else {
				others = true
			}
		case *Call:
			if x.Name == "RAND" {
				others = true
			}
		}
	})
	return reads && !others
}

// emitOnly is the database of an Affects check: it can only write events.
type emitOnly func(dst []byte, r event.Record) []byte

var errNoDatabase = errors.New("no database in an Affects check")

func (emitOnly) Events(context.Context, Selection, func(event.Record) bool) error {
	return errNoDatabase
}
func (emitOnly) Subjects(context.Context, func(string) error) error      { return errNoDatabase }
func (emitOnly) EventTypes(context.Context, func(EventType) error) error { return errNoDatabase }
func (e emitOnly) Emit(dst []byte, r event.Record) []byte                { return e(dst, r) }
