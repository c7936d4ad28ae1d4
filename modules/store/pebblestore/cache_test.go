package pebblestore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// TestCacheOfTheMemtablesRoomHoldsNoBlocks pins the accounting the
// service's memory budget rests on (storage.PebbleMemory): Pebble counts its
// memtables against its cache, so a cache of exactly their room caches no
// block, and a larger one caches blocks in the rest.
func TestCacheOfTheMemtablesRoomHoldsNoBlocks(t *testing.T) {
	const memtable = 1 << 20
	for _, c := range []struct {
		cache  int64
		blocks bool
	}{
		{MemTables * memtable, false},
		{MemTables*memtable + 2<<20, true},
	} {
		size, hits := readTwice(t, Options{CacheSize: c.cache, MemTableSize: memtable})
		if cached := size > 0 && hits > 0; cached != c.blocks {
			t.Errorf("cache of %d bytes: %d bytes of blocks, %d hits; want blocks cached %v", c.cache, size, hits, c.blocks)
		}
	}
}

// readTwice writes ~8 MiB of events through a new store opened with opts,
// so that its memtables reach their full size, then reads 500 of the
// earliest records twice, and returns the bytes the block cache holds and
// its hits.
func readTwice(t *testing.T, opts Options) (size, hits int64) {
	t.Helper()
	ctx := context.Background()
	var b *Backend
	s := store.New(func() (store.Backend, error) {
		var err error
		b, err = Open(t.TempDir(), zap.NewNop(), opts)
		return b, err
	}, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	padding := strings.Repeat("x", 1000)
	const events, batch = 8000, 100
	for i := 0; i < events; i += batch {
		cs := make([]event.Candidate, batch)
		for j := range cs {
			cs[j] = event.Candidate{Source: "https://x", Subject: fmt.Sprintf("/a/%d", j%7), Type: "io.example.thing",
				Data: fmt.Appendf(nil, `{"i":%d,"padding":%q}`, i+j, padding)}
		}
		if _, err := s.Write(ctx, cs, nil); err != nil {
			t.Fatal(err)
		}
	}
	if m := b.db.Metrics(); m.Flush.Count < 4 {
		t.Fatalf("%d flushes, want memtables of full size flushed", m.Flush.Count)
	}
	for range 2 {
		for id := uint64(0); id < 500; id++ {
			if _, found, err := b.Record(id); err != nil || !found {
				t.Fatalf("record %d: found %v, %v", id, found, err)
			}
		}
	}
	c := b.db.Metrics().BlockCache
	return c.Size, c.Hits
}
