package eventql

import "unsafe"

// The memory the blocking steps of a query keep is charged as the heap it
// takes: the sizes of the Go values they hold, not the length of their JSON.
// Go rounds allocations up to its size classes (at most 1/8 more for the
// sizes here), which allocOverhead covers.
const (
	valueSize     = int(unsafe.Sizeof(Value{}))
	eventDataSize = int(unsafe.Sizeof(eventData{}))
	recordSize    = int(unsafe.Sizeof(record{}))
	sortEntrySize = int(unsafe.Sizeof(sortEntry{}))
	// mapEntrySize is a map entry of a string key and a pointer or bool,
	// with the map's own overhead per entry.
	mapEntrySize = 48
	// accumulatorSize is an aggregate's state in a group: its interface
	// and struct.
	accumulatorSize = 64
)

// allocOverhead adds the rounding of allocations to size classes.
func allocOverhead(n int) int { return n + n/8 }

// keptSize is the memory a value takes once retained: its Value and what
// it points to.
func keptSize(v Value) int { return allocOverhead(valueSize + heldSize(v)) }

// heldSize is the heap a retained value points to.
func heldSize(v Value) int {
	switch {
	case v.kind == KindString:
		return len(v.s)
	case v.raw != nil:
		return len(v.raw)
	case v.ev != nil:
		return eventDataSize + len(v.ev.rec.JSON)
	case v.kind == KindArray:
		n := len(v.arr) * valueSize
		for _, e := range v.arr {
			n += heldSize(e)
		}
		return n
	case v.kind == KindRecord && v.rec != nil:
		n := recordSize + len(v.rec.vals)*valueSize
		for _, e := range v.rec.vals {
			n += heldSize(e)
		}
		return n
	}
	return 0
}
