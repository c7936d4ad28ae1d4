package store

import (
	"strings"
	"sync"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Bounds of the live window.
const (
	windowEvents = 8192
	windowBytes  = 32 << 20
)

// window keeps the most recent durable records in memory, so that readers
// near the head (observers following live events) do not go to storage for
// every commit. It holds a contiguous run of ids ending at the durable head;
// the writer appends a group before it advances the head.
type window struct {
	mu      sync.RWMutex
	entries []Written // ring buffer
	start   int       // index of the oldest entry
	count   int
	first   uint64 // id of the oldest entry
	bytes   int
}

func newWindow() *window {
	return &window{entries: make([]Written, windowEvents)}
}

// add appends the records of a commit, evicting the oldest beyond the bounds.
func (w *window) add(records []Written) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range records {
		if w.count == 0 {
			w.first = r.Record.ID
		}
		if w.count == len(w.entries) || (w.bytes+len(r.Record.JSON) > windowBytes && w.count > 0) {
			w.evict()
		}
		w.entries[(w.start+w.count)%len(w.entries)] = r
		w.count++
		w.bytes += len(r.Record.JSON)
	}
	for w.bytes > windowBytes && w.count > 1 {
		w.evict()
	}
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

// scan returns the records of s from the window, and false when the window
// does not hold all ids from s.From to s.To (then storage must serve the
// read).
func (w *window) scan(s Scan) ([]event.Record, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.count == 0 || s.From < w.first || s.To >= w.first+uint64(w.count) {
		return nil, false
	}
	var out []event.Record
	for id := s.From; id <= s.To; id++ {
		e := w.entries[(w.start+int(id-w.first))%len(w.entries)]
		if s.matches(e) {
			out = append(out, e.Record)
		}
	}
	if s.Descending {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, true
}

// any reports whether fn is true for a record with an id from from to
// to-1; covered is false when the window does not hold all of them.
func (w *window) any(from, to uint64, fn func(Written) bool) (found, covered bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.count == 0 || from < w.first || to > w.first+uint64(w.count) {
		return false, false
	}
	for id := from; id < to; id++ {
		if fn(w.entries[(w.start+int(id-w.first))%len(w.entries)]) {
			return true, true
		}
	}
	return false, true
}

// matches reports whether the scan selects the written record.
func (s Scan) matches(w Written) bool {
	switch {
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
