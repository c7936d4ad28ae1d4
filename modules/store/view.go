package store

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// View is one consistent state of the event log for queries: the events
// below a count, the subjects and event types they hold, and the schemas
// registered then. The view the writer gives a precondition adds the
// writes and registrations of the earlier requests of its commit group.
type View struct {
	backend    Backend
	recent     *window
	count      uint64                    // committed events in the view
	pending    []Written                 // the group's earlier writes: ids count, count+1, …
	schemas    map[string]*schema.Schema // committed schemas; the registry's, never changed
	registered map[string]*schema.Schema // registered earlier in the group
	// schemaVersion is the registry's version read before schemas was
	// taken: a later version may have changed them.
	schemaVersion uint64
	ordered       []SchemaWritten // the committed schemas in registration order; the registry's
}

// View returns the state durable now. It stays the same however the log
// grows; reads through it see nothing written later. It shares the
// registry's schemas, which a registration replaces rather than changes,
// so taking a view costs nothing however many schemas are registered.
func (s *Store) View() *View {
	count := s.visible(math.MaxUint64)
	version := s.schemas.version.Load()
	ordered, schemas := s.schemas.ordered()
	return &View{backend: s.backend, recent: s.recent, count: count, schemas: schemas, schemaVersion: version, ordered: ordered}
}

// Schemas returns the schemas registered in the view in registration order,
// as far as the backend keeps it: PostgreSQL keeps it; Pebble does not, so
// there the schemas registered before the store last started come first, by
// event type.
func (v *View) Schemas() []SchemaWritten { return v.ordered }

// Count returns the number of events in the view.
func (v *View) Count() uint64 { return v.count + uint64(len(v.pending)) }

// Scan iterates the events of the view that sc selects.
func (v *View) Scan(sc Scan) RecordIterator {
	committed := scanUpTo(v.backend, v.recent, v.count, sc)
	var pending []event.Record
	for _, w := range v.pending {
		if id := w.Record.ID; id >= sc.From && id <= sc.To && sc.matches(w) {
			pending = append(pending, w.Record)
		}
	}
	if len(pending) == 0 {
		return committed
	}
	if sc.Descending {
		for i, j := 0, len(pending)-1; i < j; i, j = i+1, j-1 {
			pending[i], pending[j] = pending[j], pending[i]
		}
		return &concatIterator{its: []RecordIterator{&sliceIterator{records: pending}, committed}}
	}
	return &concatIterator{its: []RecordIterator{committed, &sliceIterator{records: pending}}}
}

// scanUpTo iterates the records of sc among the first count committed
// events: recent ones from memory, older ones from storage.
func scanUpTo(b Backend, recent *window, count uint64, sc Scan) RecordIterator {
	if count == 0 || sc.From >= count {
		return emptyIterator{}
	}
	sc.To = min(sc.To, count-1)
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
	seen := map[string]bool{}
	var pending []string
	for _, w := range v.pending {
		if !seen[w.Subject] {
			seen[w.Subject] = true
			pending = append(pending, w.Subject)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return treeLess(pending[i], pending[j]) })
	tree := &subjectTree{base: "/", subjects: &mergedStrings{a: committed, b: pending}}
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

// treeLess orders subjects depth-first with siblings by segment byte
// order: as bytes, with "/" below every other byte.
func treeLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x == '/' {
			x = 1
		}
		if y == '/' {
			y = 1
		}
		if x != y {
			return x < y
		}
	}
	return len(a) < len(b)
}

// mergedStrings merges an iterator and a slice, both in tree order,
// dropping duplicates.
type mergedStrings struct {
	a       StringIterator
	aValid  bool
	started bool
	b       []string
	current string
}

func (m *mergedStrings) Next() bool {
	if !m.started {
		m.started = true
		m.aValid = m.a.Next()
	}
	switch {
	case !m.aValid && len(m.b) == 0:
		return false
	case !m.aValid || (len(m.b) > 0 && treeLess(m.b[0], m.a.Value())):
		m.current, m.b = m.b[0], m.b[1:]
	default:
		m.current = m.a.Value()
		if len(m.b) > 0 && m.b[0] == m.current {
			m.b = m.b[1:]
		}
		m.aValid = m.a.Next()
	}
	return true
}

func (m *mergedStrings) Value() string { return m.current }
func (m *mergedStrings) Close() error  { return m.a.Close() }

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
	for _, w := range v.pending {
		written[w.Type] = true
	}
	schemaOf := func(t string) *schema.Schema {
		if s := v.registered[t]; s != nil {
			return s
		}
		return v.schemas[t]
	}
	var names []string
	for t, ok := range written {
		if ok && schemaOf(t) == nil {
			names = append(names, t)
		}
	}
	for _, m := range []map[string]*schema.Schema{v.schemas, v.registered} {
		for t := range m {
			names = append(names, t)
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	out := make([]EventType, len(names))
	for i, name := range names {
		out[i] = EventType{Name: name, Schema: schemaOf(name), Phantom: !written[name]}
	}
	return out, nil
}

// concatIterator iterates its iterators one after the other.
type concatIterator struct {
	its []RecordIterator
	err error
}

func (c *concatIterator) Next() bool {
	for len(c.its) > 0 {
		if c.its[0].Next() {
			return true
		}
		if err := c.its[0].Close(); err != nil && c.err == nil {
			c.err = err
		}
		c.its = c.its[1:]
	}
	return false
}

func (c *concatIterator) Record() event.Record { return c.its[0].Record() }

func (c *concatIterator) Close() error {
	for _, it := range c.its {
		if err := it.Close(); err != nil && c.err == nil {
			c.err = err
		}
	}
	c.its = nil
	return c.err
}
