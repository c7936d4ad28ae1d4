package pebblestore

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// TestKindKeysRemembered: a lookup of a kind key that holds nothing is
// remembered as such; a later commit of a posting of the key is seen by
// the next lookup, and a dropped index is forgotten.
func TestKindKeysRemembered(t *testing.T) {
	b, err := Open("data", zap.NewNop(), Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const index = 7
	head := store.Head{LastHash: event.ZeroHash}
	write := func(key dataindex.Key) {
		t.Helper()
		id := head.Count
		_, r := event.Seal(nil, event.Candidate{Source: "https://x", Subject: "/a", Type: "io.x.t", Data: []byte(`{}`)}, id, time.Now(), []byte(head.LastHash))
		head.Count, head.LastHash, head.Commits = id+1, r.Hash(), head.Commits+1
		batch := store.Batch{Records: []store.Written{{Record: r, Subject: "/a", Type: "io.x.t"}}, Head: head,
			Postings: []store.Posting{{Index: index, Key: dataindex.String("v"), ID: id}, {Index: index, Key: key, ID: id}}}
		if err := b.commit(batch); err != nil {
			t.Fatal(err)
		}
	}
	lookup := func(key dataindex.Key) []uint64 {
		t.Helper()
		var ids []uint64
		it := b.Scan(store.Scan{DataIndex: index, DataKeys: []dataindex.Lookup{{Key: key, To: math.MaxUint64}}, To: math.MaxUint64})
		for it.Next() {
			ids = append(ids, it.Record().ID)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	write(dataindex.ArrayKind)
	if got := lookup(dataindex.StringKind); len(got) != 0 {
		t.Fatalf("string kind before any string: %v", got)
	}
	if held, known := b.kinds.held[kindKey{index, dataindex.StringKind}]; held || !known {
		t.Fatalf("an empty kind key probed: held %v, known %v", held, known)
	}
	write(dataindex.StringKind)
	if got := lookup(dataindex.StringKind); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("string kind after a string: %v, want [1]", got)
	}
	if got := lookup(dataindex.ArrayKind); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("array kind: %v, want [0]", got)
	}
	head.Commits++
	if err := b.commit(store.Batch{Head: head, Dropped: []uint64{index}}); err != nil {
		t.Fatal(err)
	}
	if len(b.kinds.held) != 0 {
		t.Fatalf("the kind keys of a dropped index are remembered: %v", b.kinds.held)
	}
	if got := lookup(dataindex.StringKind); len(got) != 0 {
		t.Fatalf("string kind of a dropped index: %v", got)
	}
}
