package store

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// View is one consistent state of the event log for queries: the events
// below a count, the subjects and event types they hold, and the schemas
// registered then.
type View struct {
	backend Backend
	recent  *window
	count   uint64                    // committed events in the view
	schemas map[string]*schema.Schema // committed schemas; the registry's, never changed
	// schemaVersion is the registry's version read before schemas was
	// taken: a later version may have changed them.
	schemaVersion uint64
	ordered       []SchemaWritten // the committed schemas in registration order; the registry's
	store         *Store
	// turn is the slot among the heavy evaluations of preconditions that
	// the evaluations on this view may take (WaitTurn); nil for other views.
	turn *turn
}

// turn is a slot of a semaphore, taken once and given back once.
type turn struct {
	slots chan struct{}
	held  bool
}

// WaitTurn waits, on a view of the evaluations of a write's
// preconditions, until they hold one of the store's slots for heavy
// evaluations (at most one per two processors run at once), unless they
// hold one already; on another view it returns at once. It fails when ctx
// ends first.
func (v *View) WaitTurn(ctx context.Context) error {
	if v.turn == nil || v.turn.held {
		return nil
	}
	select {
	case v.turn.slots <- struct{}{}:
		v.turn.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the view's slot back, if it holds one.
func (t *turn) release() {
	if t.held {
		t.held = false
		<-t.slots
	}
}

// View returns the state durable now. It stays the same however the log
// grows; reads through it see nothing written later. It shares the
// registry's schemas, which a registration replaces rather than changes,
// so taking a view costs nothing however many schemas are registered. On a
// shared backend that cannot tell its head it is this node's durable state,
// which may lack what other nodes acknowledged: for answers to clients use
// Current.
func (s *Store) View() *View {
	count, err := s.visible(math.MaxUint64)
	if err != nil {
		count = s.Durable()
	}
	return s.viewOf(count)
}

// Current returns the view of the state durable now including, on a shared
// backend, every write acknowledged by any node before it was called; it
// fails when a shared backend cannot tell its head.
func (s *Store) Current() (*View, error) {
	count, err := s.visible(math.MaxUint64)
	if err != nil {
		return nil, err
	}
	return s.viewOf(count), nil
}

// viewOf returns the view of the first count events.
func (s *Store) viewOf(count uint64) *View {
	version := s.schemas.version.Load()
	ordered, schemas := s.schemas.ordered()
	return &View{backend: s.backend, recent: s.recent, count: count, schemas: schemas, schemaVersion: version, ordered: ordered, store: s}
}

// DataIndexes returns the data indexes that are ready: on a shared backend
// as stored now (another node may have registered or removed one since
// this node followed), else as this store committed them.
func (v *View) DataIndexes() ([]*DataIndex, error) {
	all, _, err := v.store.DataIndexes()
	if err != nil {
		return nil, err
	}
	ready := make([]*DataIndex, 0, len(all))
	for _, x := range all {
		if x.Ready() {
			ready = append(ready, x)
		}
	}
	return ready, nil
}

// DataIndexStands reports whether the data index x is registered still:
// a removal deletes its keys with it, so a read of its keys that it stood
// after read them all.
func (v *View) DataIndexStands(x *DataIndex) (bool, error) {
	if !v.store.shared && x.removed != nil { // the removal marks it before its commit
		return !x.removed.Load(), nil
	}
	r, found, err := v.backend.State(DataIndexSpace, x.Name)
	if err != nil || !found {
		return false, err
	}
	stored, err := decodeDataIndex(r)
	return err == nil && stored.ID == x.ID, err
}

// Schemas returns the schemas registered in the view in registration order
// (the versions of their records of feature state).
func (v *View) Schemas() []SchemaWritten { return v.ordered }

// Count returns the number of events in the view.
func (v *View) Count() uint64 { return v.count }

// Scan iterates the events of the view that sc selects.
func (v *View) Scan(sc Scan) RecordIterator {
	return scanUpTo(v.backend, v.recent, v.count, sc)
}

// Groups calls fn with the ids of the events of the view that sc selects,
// grouped by subject and type (GroupFunc).
func (v *View) Groups(sc Scan, fn GroupFunc) error {
	if v.count == 0 || sc.From >= v.count {
		return nil
	}
	sc.To = min(sc.To, v.count-1)
	if sc.From > sc.To {
		return nil
	}
	return v.backend.Groups(sc, fn)
}

// scanUpTo iterates the records of sc among the first count committed
// events: recent ones from memory, older ones from storage.
func scanUpTo(b Backend, recent *window, count uint64, sc Scan) RecordIterator {
	if count == 0 || sc.From >= count {
		return emptyIterator{}
	}
	sc.To = min(sc.To, count-1)
	if sc.DataIndex != 0 {
		var err error
		if sc, err = heldKeys(b, sc); err != nil {
			return failedIterator{err}
		}
	}
	if sc.From > sc.To {
		return emptyIterator{}
	}
	records, holes, ok := recent.scan(sc)
	if ok && holes && recent.fill(b, sc.From, sc.To) == nil {
		records, holes, ok = recent.scan(sc)
	}
	if ok && !holes {
		return &sliceIterator{records: records}
	}
	return b.Scan(sc)
}

// Subjects calls fn for every subject of the view in read-subjects order
// for base "/": those with events and their ancestors.
func (v *View) Subjects(fn func(subject string) error) error {
	var committed StringIterator = emptyStrings{}
	if v.count > 0 {
		committed = &viewSubjects{StringIterator: v.backend.Subjects("/"), view: v}
	}
	tree := &subjectTree{base: "/", subjects: committed}
	for tree.Next() {
		if err := fn(tree.Value()); err != nil {
			tree.Close()
			return err
		}
	}
	return tree.Close()
}

// viewSubjects drops the subjects whose events all lie beyond the view.
type viewSubjects struct {
	StringIterator
	view *View
	err  error
}

func (it *viewSubjects) Next() bool {
	for it.err == nil && it.StringIterator.Next() {
		var found bool
		_, found, it.err = it.view.backend.LatestID(it.Value(), "", it.view.count-1)
		if found {
			return true
		}
	}
	return false
}

func (it *viewSubjects) Close() error {
	if err := it.StringIterator.Close(); err != nil {
		return err
	}
	return it.err
}

// TreeKey returns subject with every "/" turned into 0x01: tree keys in
// byte order are their subjects in tree order (treeLess), for backends that
// keep subjects sorted by a key.
func TreeKey(subject string) string { return strings.ReplaceAll(subject, "/", "\x01") }

type emptyStrings struct{}

func (emptyStrings) Next() bool    { return false }
func (emptyStrings) Value() string { return "" }
func (emptyStrings) Close() error  { return nil }

// EventTypes returns the types of the view's events and the types with a
// registered schema, sorted by name.
func (v *View) EventTypes() ([]EventType, error) {
	written := map[string]bool{}
	if v.count > 0 {
		it := v.backend.EventTypes()
		for it.Next() {
			t := it.Value()
			first := v.backend.Scan(Scan{Type: t, From: 0, To: v.count - 1})
			written[t] = first.Next()
			if err := first.Close(); err != nil {
				it.Close()
				return nil, err
			}
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	var names []string
	for t, ok := range written {
		if ok && v.schemas[t] == nil {
			names = append(names, t)
		}
	}
	for t := range v.schemas {
		names = append(names, t)
	}
	sort.Strings(names)
	out := make([]EventType, len(names))
	for i, name := range names {
		out[i] = EventType{Name: name, Schema: v.schemas[name], Phantom: !written[name]}
	}
	return out, nil
}

// heldKeys returns the read of a data index without the lookups of keys
// that b knows to hold nothing (a comparison's failures, which mostly none
// of the events have; a tag no event has yet), its ids narrowed to those
// of the remaining lookups: a read of the keys after a recent position
// then lies in the window.
func heldKeys(b Reader, sc Scan) (Scan, error) {
	holder, ok := b.(KeyHolder)
	if !ok {
		return sc, nil
	}
	var lookups []dataindex.Lookup
	from, to := uint64(math.MaxUint64), uint64(0)
	for _, l := range sc.DataKeys {
		held, err := holder.MayHold(sc.DataIndex, l.Key)
		if err != nil {
			return sc, err
		}
		if !held {
			continue
		}
		lookups = append(lookups, l)
		from, to = min(from, l.From), max(to, l.To)
	}
	sc.DataKeys = lookups
	sc.From, sc.To = max(sc.From, from), min(sc.To, to)
	return sc, nil
}
