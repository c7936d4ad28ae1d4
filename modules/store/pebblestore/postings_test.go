package pebblestore

import (
	"fmt"
	"testing"
)

// TestPostingsReset holds a reused postings to a fresh one: after reset,
// nothing of the former commit shows.
func TestPostingsReset(t *testing.T) {
	p := newPostings()
	p.add([]byte("a"), 1)
	p.add([]byte("b"), 2)
	p.add([]byte("a"), 3)
	if got := fmt.Sprint(p.keys, p.ids); got != "[a b] [[1 3] [2]]" {
		t.Fatalf("first commit: %s", got)
	}
	p.reset()
	p.add([]byte("b"), 4)
	p.add([]byte("c"), 5)
	p.add([]byte("b"), 6)
	if got := fmt.Sprint(p.keys, p.ids, len(p.index)); got != "[b c] [[4 6] [5]] 2" {
		t.Fatalf("after reset: %s", got)
	}

	for i := range keptPrefixes + 1 {
		p.add(fmt.Appendf(nil, "k%d", i), uint64(10+i))
	}
	p.reset()
	if cap(p.keys) != 0 || len(p.index) != 0 {
		t.Fatalf("a large commit's room kept: %d keys", cap(p.keys))
	}
}
