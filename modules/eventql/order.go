package eventql

import (
	"container/heap"
	"sort"
)

// sorter buffers the tuples of an ORDER BY and sorts them stably. With a
// row limit (SKIP + TOP of an ungrouped level) it keeps only the best rows,
// in a heap with the worst on top, so its memory follows the limit rather
// than the input.
type sorter struct {
	order   *OrderBy
	keep    int64 // rows to keep; -1 for all
	kind    Kind  // of the non-null keys so far
	seq     int64 // input position of the next tuple
	entries []sortEntry
}

type sortEntry struct {
	tuple []Value
	key   Value
	seq   int64 // input position: ties keep input order
	size  int   // accounted memory
}

func newSorter(q *Query) *sorter {
	s := &sorter{order: q.Order, keep: -1}
	if q.top >= 0 && !q.grouped && q.skip+q.top >= 0 { // the sum overflows for huge limits: keep all
		s.keep = max(q.skip, 0) + q.top
	}
	return s
}

// add takes a tuple with its key; it fails on a key that cannot be ordered
// with the keys before it, or when memory runs out.
func (s *sorter) add(ex *execution, key Value, tuple []Value) error {
	k := key.kind
	switch {
	case k == KindNull:
	case !orderable(k):
		return runtimeErr(s.order.Pos, "cannot order by %s", k)
	case s.kind == KindNull:
		s.kind = k
	case !sameKind(s.kind, k):
		return runtimeErr(s.order.Pos, "cannot order by values of different kinds: %s and %s", s.kind, k)
	}
	e := sortEntry{key: key, seq: s.seq}
	s.seq++
	if s.keep >= 0 && int64(len(s.entries)) >= s.keep {
		if s.keep == 0 || !s.before(e, s.entries[0]) {
			return nil // not among the best
		}
		ex.release(heap.Pop(s).(sortEntry).size)
	}
	e.key = retain(key)
	// The entry, its key, and its tuple (the tuple's Values are in a slice
	// of their own); entries grow by doubling, so count one spare entry.
	e.size = 2*sortEntrySize + heldSize(key) + allocOverhead(len(tuple)*valueSize)
	e.tuple = make([]Value, len(tuple))
	for i, v := range tuple {
		e.tuple[i] = retain(v)
		e.size += allocOverhead(heldSize(v))
	}
	if s.keep >= 0 {
		heap.Push(s, e)
	} else {
		s.entries = append(s.entries, e)
	}
	return ex.charge(e.size)
}

// sorted returns the kept tuples in order.
func (s *sorter) sorted() []sortEntry {
	sort.Slice(s.entries, func(i, j int) bool { return s.before(s.entries[i], s.entries[j]) })
	return s.entries
}

// before orders entries by key (null first ascending, last descending),
// then by input position.
func (s *sorter) before(a, b sortEntry) bool {
	x, y := a.key, b.key
	var c int
	switch {
	case x.isNull() && y.isNull():
	case x.isNull():
		c = -1
	case y.isNull():
		c = 1
	default:
		c = compare(x, y)
	}
	if s.order.Desc {
		c = -c
	}
	if c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// heap.Interface, worst entry on top.
func (s *sorter) Len() int           { return len(s.entries) }
func (s *sorter) Less(i, j int) bool { return s.before(s.entries[j], s.entries[i]) }
func (s *sorter) Swap(i, j int)      { s.entries[i], s.entries[j] = s.entries[j], s.entries[i] }
func (s *sorter) Push(x any)         { s.entries = append(s.entries, x.(sortEntry)) }
func (s *sorter) Pop() any {
	last := s.entries[len(s.entries)-1]
	s.entries = s.entries[:len(s.entries)-1]
	return last
}
