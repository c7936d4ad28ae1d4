package pebblestore

import (
	"slices"
	"testing"

	"github.com/eventstore-service/eventstore/modules/dataindex"
)

// TestKindKeysRemembered: a lookup of a kind key that holds nothing is
// remembered as such; a later commit of a posting of the key is seen by
// the next lookup, and a dropped index is forgotten.
func TestKindKeysRemembered(t *testing.T) {
	s := openKeyed(t, Options{})
	write := func(key dataindex.Key) { s.commit([]dataindex.Key{dataindex.String("v"), key}) }
	write(dataindex.ArrayKind)
	if got := s.lookup(dataindex.StringKind); len(got) != 0 {
		t.Fatalf("string kind before any string: %v", got)
	}
	if held, known := s.b.kinds.held[kindKey{filteredIndex, dataindex.StringKind}]; held || !known {
		t.Fatalf("an empty kind key probed: held %v, known %v", held, known)
	}
	write(dataindex.StringKind)
	if got := s.lookup(dataindex.StringKind); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("string kind after a string: %v, want [1]", got)
	}
	if got := s.lookup(dataindex.ArrayKind); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("array kind: %v, want [0]", got)
	}
	s.drop()
	if len(s.b.kinds.held) != 0 {
		t.Fatalf("the kind keys of a dropped index are remembered: %v", s.b.kinds.held)
	}
	if got := s.lookup(dataindex.StringKind); len(got) != 0 {
		t.Fatalf("string kind of a dropped index: %v", got)
	}
}
