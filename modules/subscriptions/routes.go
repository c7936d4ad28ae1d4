package subscriptions

import "sort"

// maxRoutes bounds the events a subscription remembers the partitions of.
const maxRoutes = 1 << 20

// routes remembers the partitions of the matching events that the polls of
// a subscription read last, in id order: of every one of them with an id
// from lo up to before next. A poll that must come back to events it
// passed over (those of partitions whose windows were full then) reads
// just those events by id (store.Scan.IDs), not the log between them. Only
// the oldest are forgotten, when it holds maxRoutes.
type routes struct {
	lo, next uint64
	used     bool // lo and next are set
	ids      []uint64
	parts    []uint16
	head     int // entries before head are gone
}

// covers reports whether r knows the matching events from id from on, up
// to next (from == next: none yet, but what is read next continues them).
func (r *routes) covers(from uint64) bool { return r.used && from >= r.lo && from <= r.next }

// reset forgets every route; what is added next starts at from.
func (r *routes) reset(from uint64) {
	*r = routes{lo: from, next: from, used: true, ids: r.ids[:0], parts: r.parts[:0]}
}

// after returns the index of the first route with an id at or after from.
func (r *routes) after(from uint64) int {
	held := r.ids[r.head:]
	return r.head + sort.Search(len(held), func(i int) bool { return held[i] >= from })
}

// add appends the route of a matching event with an id at or after next;
// extend then says how far the events were all added.
func (r *routes) add(id uint64, partition int) {
	r.ids, r.parts = append(r.ids, id), append(r.parts, uint16(partition))
	if len(r.ids)-r.head > maxRoutes {
		r.lo = r.ids[r.head] + 1
		r.head++
	}
	if r.head > len(r.ids)/2 {
		r.ids = append(r.ids[:0], r.ids[r.head:]...)
		r.parts = append(r.parts[:0], r.parts[r.head:]...)
		r.head = 0
	}
}

// extend notes that every matching event before next was added.
func (r *routes) extend(next uint64) { r.next = max(r.next, next) }
