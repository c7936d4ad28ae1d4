package pebblestore

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// keyedStore commits events to a Pebble store in memory, with postings in
// data index filteredIndex.
type keyedStore struct {
	t    *testing.T
	b    *Backend
	head store.Head
}

const filteredIndex = 7

func openKeyed(t *testing.T, opts Options) *keyedStore {
	t.Helper()
	opts.FS = vfs.NewMem()
	b, err := Open("data", zap.NewNop(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &keyedStore{t: t, b: b, head: store.Head{LastHash: event.ZeroHash}}
}

// commit commits one event per element of keyed, with a posting of each
// of its keys.
func (s *keyedStore) commit(keyed ...[]dataindex.Key) {
	s.t.Helper()
	var batch store.Batch
	for _, keys := range keyed {
		id := s.head.Count
		_, r := event.Seal(nil, event.Candidate{Source: "https://x", Subject: "/a", Type: "io.x.t", Data: []byte(`{}`)}, id, time.Now(), []byte(s.head.LastHash))
		s.head.Count, s.head.LastHash = id+1, r.Hash()
		batch.Records = append(batch.Records, store.Written{Record: r, Subject: "/a", Type: "io.x.t"})
		for _, key := range keys {
			batch.Postings = append(batch.Postings, store.Posting{Index: filteredIndex, Key: key, ID: id})
		}
	}
	s.head.Commits++
	batch.Head = s.head
	if err := s.b.commit(batch); err != nil {
		s.t.Fatal(err)
	}
}

// write commits one event per key, of a string: the key and the string
// kind.
func (s *keyedStore) write(keys ...dataindex.Key) {
	s.t.Helper()
	keyed := make([][]dataindex.Key, len(keys))
	for i, key := range keys {
		keyed[i] = []dataindex.Key{key, dataindex.StringKind}
	}
	s.commit(keyed...)
}

// drop commits the drop of the index.
func (s *keyedStore) drop() {
	s.t.Helper()
	s.head.Commits++
	if err := s.b.commit(store.Batch{Head: s.head, Dropped: []uint64{filteredIndex}}); err != nil {
		s.t.Fatal(err)
	}
}

// lookup returns the ids of the events with key, asking first whether
// the key may hold any, as the store does (store.KeyHolder).
func (s *keyedStore) lookup(key dataindex.Key) []uint64 {
	s.t.Helper()
	var ids []uint64
	if !s.mayHold(key) {
		return nil
	}
	it := s.b.Scan(store.Scan{DataIndex: filteredIndex, DataKeys: []dataindex.Lookup{{Key: key, To: math.MaxUint64}}, To: math.MaxUint64})
	for it.Next() {
		ids = append(ids, it.Record().ID)
	}
	if err := it.Close(); err != nil {
		s.t.Fatal(err)
	}
	return ids
}

func (s *keyedStore) mayHold(key dataindex.Key) bool {
	held, err := s.b.MayHold(filteredIndex, key)
	if err != nil {
		s.t.Fatal(err)
	}
	return held
}

// ready waits until the index's filters are ready.
func (s *keyedStore) ready() {
	s.t.Helper()
	s.mayHold("s?") // starts them
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.b.absent.mu.Lock()
		f := s.b.absent.filters[filteredIndex]
		ready := f != nil && f.ready
		s.b.absent.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatal("the key filters are not ready")
		}
	}
}

func keys(prefix string, n int) []dataindex.Key {
	out := make([]dataindex.Key, n)
	for i := range out {
		out[i] = dataindex.String(fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestAbsentKeysFiltered: once an index's filters are made from its
// entries, every key that holds a posting may hold one, those committed
// while the filters were made and after included, and nearly every other
// key is known to hold none; a lookup of such a key reads nothing.
func TestAbsentKeysFiltered(t *testing.T) {
	s := openKeyed(t, Options{})
	stored := keys("k", 3*firstFilterKeys) // three blooms' worth, so that the filters grow
	for i := 0; i < len(stored); i += 10_000 {
		s.write(stored[i:min(i+10_000, len(stored))]...)
	}
	if !s.mayHold("s-absent") {
		t.Fatal("a key is known to be absent before the filters are made")
	}
	var during []dataindex.Key
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // commits while the entries are scanned
		defer wg.Done()
		for i, batch := range slices.Collect(slices.Chunk(keys("during", 2_000), 100)) {
			s.write(batch...)
			during = append(during, batch...)
			if i == 0 {
				s.mayHold("s-absent") // the scan starts after a commit
			}
		}
	}()
	wg.Wait()
	s.ready()
	after := keys("after", 100)
	s.write(after...)
	for _, key := range slices.Concat(stored, during, after) {
		if !s.mayHold(key) {
			t.Fatalf("key %q holds a posting, and the filters say it holds none", key)
		}
	}
	absent := 0
	for _, key := range keys("absent", 10_000) {
		if !s.mayHold(key) {
			absent++
		}
	}
	if absent < 9_700 {
		t.Errorf("%d of 10,000 absent keys known as such, want ≥ 9,700", absent)
	}
	s.b.absent.mu.Lock()
	blooms := len(s.b.absent.filters[filteredIndex].blooms)
	s.b.absent.mu.Unlock()
	if blooms < 3 {
		t.Errorf("%d blooms for %d keys", blooms, len(stored)+2_100)
	}
	if got, want := s.lookup("safter7"), []uint64{uint64(len(stored) + 2_000 + 7)}; !slices.Equal(got, want) {
		t.Errorf("lookup of after7: %v, want %v", got, want)
	}
	if got := s.lookup("sabsent1"); len(got) != 0 {
		t.Errorf("lookup of absent1: %v", got)
	}
}

// TestAbsentKeysForgotten: over its memory limit an index has no filters
// (each lookup may hold); a dropped index's filters go with it, and a
// store closed while its filters are made closes.
func TestAbsentKeysForgotten(t *testing.T) {
	s := openKeyed(t, Options{KeyFilterBytes: 1})
	s.write(keys("k", 10)...)
	s.mayHold("sx")
	if s.mayHold("sx") != true || s.b.absent.bytes != 0 {
		t.Fatalf("over the limit: may hold %v, %d bytes", s.mayHold("sx"), s.b.absent.bytes)
	}

	s = openKeyed(t, Options{})
	s.write(keys("k", 10)...)
	s.ready()
	if s.mayHold("sx") {
		t.Fatal("an absent key may hold")
	}
	s.drop()
	s.mayHold("sx") // a read planned before the drop
	if len(s.b.absent.filters) != 0 || s.b.absent.bytes != 0 {
		t.Fatalf("a dropped index's filters remain: %d, %d bytes", len(s.b.absent.filters), s.b.absent.bytes)
	}

	s = openKeyed(t, Options{})
	s.write(keys("k", 50_000)...)
	s.mayHold("sx")
	s.b.absent.close() // as Close does first: the scan stops, and no other starts
	s.b.absent.mu.Lock()
	scanned := s.b.absent.filters[filteredIndex].ready
	s.b.absent.mu.Unlock()
	if scanned || s.mayHold("sx") != true {
		t.Fatal("the filters of a closed store are used")
	}
}
