package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Scan iterates the records selected by s. Every event ("/" recursive, or
// no subject and no type) walks the event log itself; any other read walks
// the index that serves it (the entries of each key of a data index, merged;
// type, subject and type, exact subject merged with
// the tree index when recursive, the tree index alone for a subject prefix
// ending in "/", the exact index entries of every subject with the prefix
// otherwise) and looks each record up by id.
func (b *Backend) Scan(s store.Scan) store.RecordIterator {
	var ids []*indexIterator
	switch prefix := s.SubjectPrefix; {
	case len(s.IDs) > 0:
		ids = []*indexIterator{givenIDs(s)}
	case s.DataIndex != 0:
		if len(s.DataKeys) == 0 {
			return &failedIterator{}
		}
		for _, l := range s.DataKeys {
			ranged := s
			ranged.From, ranged.To = max(s.From, l.From), min(s.To, l.To)
			if ranged.From > ranged.To {
				continue
			}
			ids = append(ids, b.index(dataPrefix(nil, s.DataIndex, l.Key), ranged))
		}
		if len(ids) == 0 {
			return &failedIterator{}
		}
	case prefix == "" || prefix == "/":
	case strings.ContainsAny(prefix, "\x00\x01"):
		return &failedIterator{} // no subject holds these bytes, which the key encoding uses
	case strings.HasSuffix(prefix, "/"):
		ids = []*indexIterator{b.index(treePrefix(nil, strings.TrimSuffix(prefix, "/")), s)}
	default:
		ids = []*indexIterator{b.prefixIndex(prefix, s)}
	}
	switch {
	case ids != nil:
	case s.Type != "" && s.Subject == "":
		ids = []*indexIterator{b.index(typePrefix(nil, s.Type), s)}
	case s.Type != "" && !s.Recursive:
		ids = []*indexIterator{b.index(subjectTypePrefix(nil, s.Subject, s.Type), s)}
	case s.Type != "":
		return &failedIterator{err: fmt.Errorf("a scan by type takes no recursive subject")}
	case s.Subject != "" && (s.Subject != "/" || !s.Recursive):
		ids = []*indexIterator{b.index(exactPrefix(nil, s.Subject), s)}
		if s.Recursive {
			ids = append(ids, b.index(treePrefix(nil, s.Subject), s))
		}
	}
	if ids == nil {
		lower := eventKey(nil, s.From)
		upper := prefixEnd([]byte{spaceEvent})
		if s.To != ^uint64(0) {
			upper = eventKey(nil, s.To+1)
		}
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return &failedIterator{err: err}
		}
		return &logIterator{it: it, descending: s.Descending}
	}
	return &lookupIterator{ids: ids, db: b.db, from: s.From, descending: s.Descending}
}

// givenIDs iterates the ids of s.IDs from s.From to s.To.
func givenIDs(s store.Scan) *indexIterator {
	x := &indexIterator{from: s.From, to: s.To, descending: s.Descending, started: true, gathered: true}
	for _, id := range s.IDs {
		if id >= s.From && id <= s.To {
			x.ids = append(x.ids, id)
		}
	}
	if s.Descending {
		x.pos = len(x.ids) - 1
	}
	return x
}

// prefixIndex gathers the ids from..to of every subject starting with
// prefix from the exact index, in order.
func (b *Backend) prefixIndex(prefix string, s store.Scan) *indexIterator {
	lower := appendSubject([]byte{spaceExact}, prefix)
	x := &indexIterator{from: s.From, to: s.To, descending: s.Descending, started: true, gathered: true}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		x.err = err
		return x
	}
	var posting []uint64
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		posting, err = decodePosting(posting[:0], idOf(it.Key()), it.Value())
		for _, id := range posting {
			if id >= s.From && id <= s.To {
				x.ids = append(x.ids, id)
			}
		}
	}
	x.err = errors.Join(err, it.Close())
	slices.Sort(x.ids)
	if s.Descending {
		x.pos = len(x.ids) - 1
	}
	return x
}

func (b *Backend) index(prefix []byte, s store.Scan) *indexIterator {
	_, upper := idRange(prefix, s.From, s.To)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	return &indexIterator{it: it, err: err, from: s.From, to: s.To, descending: s.Descending, prefix: prefix}
}

// logIterator walks the event log directly.
type logIterator struct {
	it         *pebble.Iterator
	descending bool
	started    bool
	record     event.Record
}

// step positions it on its first entry in order, or moves it on by one.
func step(it *pebble.Iterator, started, descending bool) bool {
	switch {
	case !started && descending:
		return it.Last()
	case !started:
		return it.First()
	case descending:
		return it.Prev()
	}
	return it.Next()
}

func (l *logIterator) Next() bool {
	ok := step(l.it, l.started, l.descending)
	l.started = true
	if !ok {
		return false
	}
	l.record = event.Record{ID: idOf(l.it.Key()), JSON: l.it.Value()}
	return true
}

func (l *logIterator) Record() event.Record { return l.record }
func (l *logIterator) Close() error         { return closeIterator(&l.it) }

// indexIterator walks the ids from..to of the postings of one prefix.
type indexIterator struct {
	it         *pebble.Iterator
	err        error
	prefix     []byte
	from, to   uint64
	descending bool
	started    bool
	valid      bool
	gathered   bool     // ids holds every id; there is no posting to load
	ids        []uint64 // of the current posting
	pos        int
	current    uint64
}

// advance moves to the next id in order and reports whether there is one.
func (x *indexIterator) advance() bool {
	x.valid = x.err == nil && x.step()
	return x.valid
}

func (x *indexIterator) step() bool {
	for {
		if x.pos >= 0 && x.pos < len(x.ids) {
			id := x.ids[x.pos]
			if x.descending {
				x.pos--
			} else {
				x.pos++
			}
			if id < x.from || id > x.to {
				if (x.descending && id < x.from) || (!x.descending && id > x.to) {
					return false // every further id is out of range too
				}
				continue
			}
			x.current = id
			return true
		}
		if !x.nextPosting() {
			return false
		}
	}
}

// nextPosting loads the next posting in order. Ascending, the first one is
// the last posting starting at or below from, which may hold from (from 0:
// the first posting, one seek where a key has none).
func (x *indexIterator) nextPosting() bool {
	if x.gathered {
		return false
	}
	var ok bool
	switch {
	case !x.started && !x.descending && x.from == 0:
		ok = x.it.First()
	case !x.started && !x.descending:
		ok = x.it.SeekLT(appendID(append([]byte(nil), x.prefix...), x.from+1)) || x.it.First()
	default:
		ok = step(x.it, x.started, x.descending)
	}
	x.started = true
	if !ok {
		x.err = x.it.Error()
		return false
	}
	x.ids, x.err = decodePosting(x.ids[:0], idOf(x.it.Key()), x.it.Value())
	if x.err != nil {
		return false
	}
	if x.descending {
		x.pos = len(x.ids) - 1
	} else {
		x.pos = 0
	}
	return true
}

func (x *indexIterator) id() uint64 { return x.current }

func (x *indexIterator) close() error {
	return errors.Join(x.err, closeIterator(&x.it))
}

// closeIterator closes *it once and forgets it: Pebble pools closed
// iterators, so a second Close could close one handed out since. Every
// Close of this package's iterators may therefore be called again.
func closeIterator(it **pebble.Iterator) error {
	if *it == nil {
		return nil
	}
	err := (*it).Close()
	*it = nil
	return err
}

func closeAll(ids []*indexIterator) error {
	var errs []error
	for _, x := range ids {
		errs = append(errs, x.close())
	}
	return errors.Join(errs...)
}

// lookupIterator merges the ids of its index iterators in order, each id
// once (the keys of a data index may share ids), and looks each record up
// in the event log, whose iterator it opens only once an index holds an id
// (a precondition that reads the events after a position mostly finds
// none).
type lookupIterator struct {
	ids        []*indexIterator
	db         *pebble.DB
	from       uint64           // the lowest id wanted
	records    *pebble.Iterator // opened at the first id the indexes hold
	descending bool
	started    bool
	positioned bool // records is on record
	record     event.Record
	err        error
	key        []byte
}

func (l *lookupIterator) Next() bool {
	if l.err != nil {
		return false
	}
	if !l.started {
		for _, x := range l.ids {
			x.advance()
		}
		l.started = true
	} else {
		for _, x := range l.ids {
			if x.valid && x.id() == l.record.ID {
				x.advance()
			}
		}
	}
	x := l.current()
	if x == nil {
		return false
	}
	id := x.id()
	if l.records == nil {
		records, err := l.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(nil, l.from), UpperBound: prefixEnd([]byte{spaceEvent})})
		if err != nil {
			l.err = err
			return false
		}
		l.records = records
	}
	l.key = eventKey(l.key[:0], id)
	if !l.position(id) {
		l.err = errors.Join(l.records.Error(), &store.CorruptionError{Detail: fmt.Sprintf("index entry for missing event %d", id)})
		return false
	}
	l.record, l.positioned = event.Record{ID: id, JSON: l.records.Value()}, true
	return true
}

// position moves records onto the record of id and reports whether it is
// there. The log has no gaps, so the record after the current one is the
// next id's: where an index holds a run of neighbouring ids (a subtree
// written together), a step reads it, which costs a fraction of a seek.
func (l *lookupIterator) position(id uint64) bool {
	switch {
	case l.positioned && !l.descending && id == l.record.ID+1:
		return l.records.Next() && bytes.Equal(l.records.Key(), l.key)
	case l.positioned && l.descending && id+1 == l.record.ID:
		return l.records.Prev() && bytes.Equal(l.records.Key(), l.key)
	case l.descending:
		return l.records.SeekLT(eventKey(nil, id+1)) && bytes.Equal(l.records.Key(), l.key)
	}
	// Ascending seeks move forward, which Pebble serves by stepping.
	return l.records.SeekGE(l.key) && bytes.Equal(l.records.Key(), l.key)
}

// current returns the index iterator holding the next id in order.
func (l *lookupIterator) current() *indexIterator {
	var best *indexIterator
	for _, x := range l.ids {
		if !x.valid {
			continue
		}
		if best == nil || (x.id() < best.id()) != l.descending {
			best = x
		}
	}
	return best
}

func (l *lookupIterator) Record() event.Record { return l.record }

func (l *lookupIterator) Close() error {
	return errors.Join(l.err, closeAll(l.ids), closeIterator(&l.records))
}

type failedIterator struct{ err error }

func (f *failedIterator) Next() bool           { return false }
func (f *failedIterator) Record() event.Record { return event.Record{} }
func (f *failedIterator) Close() error         { return f.err }

// Subjects iterates the subjects with events, base and below, in
// depth-first order, by skipping from one subject's exact index entries to
// the next subject.
func (b *Backend) Subjects(base string) store.StringIterator {
	lower := []byte{spaceExact}
	upper := []byte{spaceExact + 1}
	if base != "/" {
		lower = appendSubject([]byte{spaceExact}, base)
		upper = append(append([]byte(nil), lower...), subjectSeparator+1)
	}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	// After a subject's own entries (<subject> 0x00 ...) come its
	// descendants (<subject> 0x01 ...).
	return &distinctIterator{it: it, err: err, space: spaceExact, skip: subjectSeparator, decode: decodeSubject}
}

// SubjectSeeker finds the subjects with events, base and below, on one
// iterator over their exact index entries: a seek to <key> lands on the
// first entry of the first subject whose tree key is key or follows it
// (subjects are encoded as their tree keys, and key holds no 0x00).
func (b *Backend) SubjectSeeker(base string) store.SubjectSeeker {
	lower := []byte{spaceExact}
	upper := []byte{spaceExact + 1}
	if base != "/" {
		lower = appendSubject([]byte{spaceExact}, base)
		upper = append(append([]byte(nil), lower...), subjectSeparator+1)
	}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	return &subjectSeeker{it: it, err: err}
}

// subjectSeeker is the store.SubjectSeeker of the Pebble backend.
type subjectSeeker struct {
	it   *pebble.Iterator
	err  error
	seek []byte
}

func (s *subjectSeeker) Seek(key string) (string, bool, error) {
	if s.err != nil {
		return "", false, s.err
	}
	s.seek = append(append(s.seek[:0], spaceExact), key...)
	if !s.it.SeekGE(s.seek) {
		return "", false, s.it.Error()
	}
	k := s.it.Key()
	end := bytes.IndexByte(k, terminator)
	if end < 0 {
		s.err = &store.CorruptionError{Detail: fmt.Sprintf("malformed index key %q", k)}
		return "", false, s.err
	}
	return decodeSubject(k[1:end]), true, nil
}

func (s *subjectSeeker) Close() error {
	return errors.Join(s.err, closeIterator(&s.it))
}

// EventTypes iterates the types of written events, by skipping from one
// type's index entries to the next type.
func (b *Backend) EventTypes() store.StringIterator {
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceType}, UpperBound: []byte{spaceType + 1}})
	return &distinctIterator{it: it, err: err, space: spaceType, skip: terminator + 1, decode: func(b []byte) string { return string(b) }}
}

// distinctIterator walks the distinct names (subjects, types) of an index
// space whose keys are <space> <name> 0x00 <id>, seeking from one name to
// the next: to <space> <name> skip.
type distinctIterator struct {
	it      *pebble.Iterator
	err     error
	space   byte
	skip    byte
	decode  func([]byte) string
	started bool
	current []byte
	seek    []byte
}

func (d *distinctIterator) Next() bool {
	if d.err != nil {
		return false
	}
	var ok bool
	if !d.started {
		ok = d.it.First()
		d.started = true
	} else {
		d.seek = append(append(append(d.seek[:0], d.space), d.current...), d.skip)
		ok = d.it.SeekGE(d.seek)
	}
	if !ok {
		return false
	}
	key := d.it.Key()
	end := bytes.IndexByte(key, terminator)
	if end < 0 {
		d.err = &store.CorruptionError{Detail: fmt.Sprintf("malformed index key %q", key)}
		return false
	}
	d.current = append(d.current[:0], key[1:end]...)
	return true
}

func (d *distinctIterator) Value() string { return d.decode(d.current) }

func (d *distinctIterator) Close() error {
	return errors.Join(d.err, closeIterator(&d.it))
}
