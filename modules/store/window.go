package store

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
)

// windowEvents is how many records the live window holds at most.
const windowEvents = 8192

// DefaultWindowBytes bounds the record bytes of the live window unless
// Memory.WindowBytes says otherwise.
const DefaultWindowBytes = 32 << 20

// window keeps the most recent durable records in memory, so that readers
// near the head (observers following live events) do not go to storage for
// every commit. It holds a contiguous run of ids ending at the durable head;
// the writer appends a group before it advances the head. Events that other
// nodes committed may come without their records (a hole: Record.JSON nil,
// see Tx.Followed); the first read that selects one fills the holes of its
// range from storage, once for every reader (fill).
type window struct {
	mu      sync.RWMutex
	entries []Written // ring buffer
	start   int       // index of the oldest entry
	count   int
	first   uint64 // id of the oldest entry
	bytes   int
	limit   int // of bytes
	// erasures counts the erasures that changed entries (erase, forget):
	// a fill whose read began before one puts nothing, for it may hold
	// the data erased since.
	erasures uint64

	filling sync.Mutex // held by the read that fills holes
}

// newWindow returns an empty window of at most limit bytes of records
// (beside the newest record, which it always keeps).
func newWindow(limit int) *window {
	return &window{entries: make([]Written, windowEvents), limit: limit}
}

// add appends the records of a commit, evicting the oldest beyond the bounds.
func (w *window) add(records []Written) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range records {
		if w.count == 0 {
			w.first = r.Record.ID
		}
		if w.count == len(w.entries) || (w.bytes+len(r.Record.JSON) > w.limit && w.count > 0) {
			w.evict()
		}
		w.entries[(w.start+w.count)%len(w.entries)] = r
		w.count++
		w.bytes += len(r.Record.JSON)
	}
	for w.bytes > w.limit && w.count > 1 {
		w.evict()
	}
}

// erase replaces the records of erased events that the window holds, and
// forgets their keys: the data indexes no longer hold them.
func (w *window) erase(erased []ErasedRecord) {
	if len(erased) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.erasures++
	for _, e := range erased {
		id := e.Record.ID
		if w.count == 0 || id < w.first || id >= w.first+uint64(w.count) {
			continue
		}
		entry := &w.entries[(w.start+int(id-w.first))%len(w.entries)]
		if entry.Record.JSON == nil {
			continue // a hole: its fill reads the record from storage
		}
		w.bytes += len(e.Record.JSON) - len(entry.Record.JSON)
		entry.Record = e.Record
		keyed := make([]dataindex.Keyed, len(entry.Keyed))
		for i, k := range entry.Keyed {
			keyed[i] = dataindex.Keyed{Index: k.Index}
		}
		entry.Keyed = keyed
	}
}

// forget makes the entries with ids from through to holes, keys and all,
// which readers then read from storage: another node erased events among
// them, and this node learns of it by the management event alone.
func (w *window) forget(from, to uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.erasures++
	for id := max(from, w.first); id <= to && id < w.first+uint64(w.count); id++ {
		e := &w.entries[(w.start+int(id-w.first))%len(w.entries)]
		w.bytes -= len(e.Record.JSON)
		e.Record.JSON, e.Keyed = nil, nil
	}
}

// describe returns the window's figures for diagnostics.
func (w *window) describe() map[string]any {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return map[string]any{"events": w.count, "bytes": w.bytes, "limitBytes": w.limit}
}

// reset forgets every record.
func (w *window) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.entries)
	w.start, w.count, w.bytes = 0, 0, 0
}

func (w *window) evict() {
	w.bytes -= len(w.entries[w.start].Record.JSON)
	w.entries[w.start] = Written{}
	w.start = (w.start + 1) % len(w.entries)
	w.count--
	w.first++
}

// windowKeyedSpan bounds the ids a read of a data index looks through in
// the window, each record's keys compared with the read's: beyond it, a
// seek into the index's postings in storage costs less.
const windowKeyedSpan = 512

// scan returns the records of s from the window, and false when the window
// does not hold all ids from s.From to s.To, or s reads a data index over
// more than windowKeyedSpan ids or over a record that the index did not
// key at its commit (then storage must serve the read); holes tells that a
// selected record is a hole (fill).
func (w *window) scan(s Scan) (records []event.Record, holes, ok bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.count == 0 || s.From < w.first || s.To >= w.first+uint64(w.count) {
		return nil, false, false
	}
	if s.DataIndex != 0 && s.To-s.From >= windowKeyedSpan {
		return nil, false, false
	}
	var out []event.Record
	for id := s.From; id <= s.To; id++ {
		e := w.entries[(w.start+int(id-w.first))%len(w.entries)]
		if s.DataIndex != 0 {
			match, known := dataindex.Reads(s.DataKeys, s.DataIndex, e.Keyed, e.Record.ID)
			if !known {
				return nil, false, false // a hole, or keyed by the index's build
			}
			if match {
				out = append(out, e.Record)
			}
			continue
		}
		if s.matches(e) {
			out = append(out, e.Record)
			holes = holes || e.Record.JSON == nil
		}
	}
	if s.Descending {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, holes, true
}

// fill reads from b the records of the window's holes with ids from
// through to, and puts them into the window; a concurrent fill of the same
// holes waits for it and finds nothing left to read.
func (w *window) fill(b Reader, from, to uint64) error {
	w.filling.Lock()
	defer w.filling.Unlock()
	lo, hi, erasures, found := w.holes(from, to)
	if !found {
		return nil
	}
	var records []event.Record
	it := b.Scan(Scan{From: lo, To: hi})
	for it.Next() {
		r := it.Record()
		records = append(records, event.Record{ID: r.ID, JSON: bytes.Clone(r.JSON)}) // the iterator reuses its buffer
	}
	if err := it.Close(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.erasures != erasures {
		return nil // the records read may hold erased data: storage serves the read
	}
	for _, r := range records {
		if r.ID < w.first || r.ID >= w.first+uint64(w.count) {
			continue // evicted meanwhile
		}
		e := &w.entries[(w.start+int(r.ID-w.first))%len(w.entries)]
		if e.Record.ID == r.ID && e.Record.JSON == nil {
			e.Record.JSON = r.JSON
			w.bytes += len(r.JSON)
		}
	}
	for w.bytes > w.limit && w.count > 1 {
		w.evict()
	}
	return nil
}

// holes returns the lowest and the highest id of the holes among ids from
// through to, and the count of erasures as of then.
func (w *window) holes(from, to uint64) (lo, hi, erasures uint64, found bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	erasures = w.erasures
	for id := max(from, w.first); id <= to && id < w.first+uint64(w.count); id++ {
		if w.entries[(w.start+int(id-w.first))%len(w.entries)].Record.JSON == nil {
			if !found {
				lo, found = id, true
			}
			hi = id
		}
	}
	return lo, hi, erasures, found
}

// any reports whether fn is true for a record with an id from from to
// to-1; covered is false when the window does not hold all of them (a
// hole counts as not held: fn may read the record).
func (w *window) any(from, to uint64, fn func(Written) bool) (found, covered bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.count == 0 || from < w.first || to > w.first+uint64(w.count) {
		return false, false
	}
	for id := from; id < to; id++ {
		e := w.entries[(w.start+int(id-w.first))%len(w.entries)]
		if e.Record.JSON == nil {
			return false, false
		}
		if fn(e) {
			return true, true
		}
	}
	return false, true
}

// matches reports whether the scan selects the written record.
func (s Scan) matches(w Written) bool {
	switch {
	case len(s.IDs) > 0:
		_, found := slices.BinarySearch(s.IDs, w.Record.ID)
		return found
	case s.Type != "" && w.Type != s.Type:
		return false
	case s.SubjectPrefix != "":
		return strings.HasPrefix(w.Subject, s.SubjectPrefix)
	case s.Subject == "":
		return true
	case s.Recursive:
		return Within(s.Subject, w.Subject)
	}
	return w.Subject == s.Subject
}

// sliceIterator iterates records held in memory.
type sliceIterator struct {
	records []event.Record
	pos     int
}

func (it *sliceIterator) Next() bool {
	if it.pos >= len(it.records) {
		return false
	}
	it.pos++
	return true
}

func (it *sliceIterator) Record() event.Record { return it.records[it.pos-1] }
func (it *sliceIterator) Close() error         { return nil }
