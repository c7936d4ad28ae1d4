package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// indexedEvent is the data of event i of the data index tests: two types,
// a member of ten values, two tags of three, a number.
func indexedEvent(i int) event.Candidate {
	eventType := "io.x.even"
	if i%2 == 1 {
		eventType = "io.x.odd"
	}
	data := fmt.Sprintf(`{"who":"/r/%d","tags":["t%d","t%d"],"n":%d}`, i%10, i%3, (i+1)%3, i%7)
	return storetest.Candidate(fmt.Sprintf("/s/%d", i%50), eventType, data)
}

// writeIndexed writes the events from..to-1 of indexedEvent, 500 a write.
func writeIndexed(t testing.TB, s *store.Store, from, to int) {
	t.Helper()
	for i := from; i < to; i += 500 {
		var batch []event.Candidate
		for j := i; j < min(i+500, to); j++ {
			batch = append(batch, indexedEvent(j))
		}
		storetest.Write(t, s, batch...)
	}
}

// ready waits until the index name is ready and returns it.
func ready(t testing.TB, s *store.Store, name string) *store.DataIndex {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		x, err := s.DataIndexNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		if x.Ready() {
			return x
		}
		if time.Now().After(deadline) {
			t.Fatalf("index %s not ready: %+v", name, x)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkIndex compares every key of x, read through the index, with the
// keys of every stored event computed afresh: no posting is missing,
// extra or repeated.
func checkIndex(t testing.TB, s *store.Store, x *store.DataIndex) {
	t.Helper()
	tokens, err := dataindex.Tokens(x.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[dataindex.Key][]uint64{}
	sc := jsonscan.New(nil)
	it := s.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for it.Next() {
		m, err := it.Record().Split(sc)
		if err != nil {
			t.Fatal(err)
		}
		eventType, err := m.Text(event.MemberType, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !x.Covers(eventType) {
			continue
		}
		for _, k := range dataindex.Keys(nil, m[event.MemberData], tokens) {
			want[k] = append(want[k], it.Record().ID)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("index %s: no event has a key", x.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got := scanKeys(t, s, x, k); !slices.Equal(got, want[k]) {
			t.Fatalf("index %s, key %q: %d events %v…, want %d %v…", x.Name, k, len(got), got[:min(len(got), 5)], len(want[k]), want[k][:min(len(want[k]), 5)])
		}
	}
}

// scanKeys returns the ids of the events that have any of keys in x.
func scanKeys(t testing.TB, s *store.Store, x *store.DataIndex, keys ...dataindex.Key) []uint64 {
	t.Helper()
	var ids []uint64
	lookups := make([]dataindex.Lookup, len(keys))
	for i, k := range keys {
		lookups[i] = dataindex.Lookup{Key: k, From: 0, To: math.MaxUint64}
	}
	it := s.Scan(store.Scan{DataIndex: x.ID, DataKeys: lookups, From: 0, To: math.MaxUint64})
	for it.Next() {
		ids = append(ids, it.Record().ID)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestDataIndexLifecycle registers data indexes on a store holding
// events (built in the background, a chunk a commit), writes on, restarts,
// removes and registers again, and checks every key of every index
// against the events each time.
func TestDataIndexLifecycle(t *testing.T) {
	storetest.Each(t, &pg, testDataIndexLifecycle)
}

func testDataIndexLifecycle(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	open := b.New(t)
	s := storetest.StartWith(t, open, store.Memory{MaxDataIndexes: 2})
	writeIndexed(t, s, 0, 25_000)

	who, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "who", Path: "/who"})
	if err != nil {
		t.Fatal(err)
	}
	if who.From != 25_000 {
		t.Fatalf("From %d, want 25000", who.From)
	}
	tagsDef := dataindex.Definition{Name: "tags", Path: "/tags", EventTypes: []string{"io.x.odd"}}
	registered, err := s.RegisterDataIndex(ctx, tagsDef)
	if err != nil {
		t.Fatal(err)
	}
	writeIndexed(t, s, 25_000, 26_000)
	who, tags := ready(t, s, "who"), ready(t, s, "tags")
	if tags.ID != registered.ID || tags.From != registered.From {
		t.Fatalf("the index as registered %+v and as built %+v", registered, tags)
	}
	checkIndex(t, s, who)
	checkIndex(t, s, tags)
	// A union of keys reads each event once.
	if got := scanKeys(t, s, tags, dataindex.String("t1"), dataindex.String("t2")); len(got) != 13_000 || !slices.IsSorted(got) {
		t.Fatalf("odd events tagged t1 or t2: %d, sorted %v", len(got), slices.IsSorted(got))
	}

	if again, err := s.RegisterDataIndex(ctx, tagsDef); err != nil || again.ID != tags.ID {
		t.Fatalf("the same registration again: %+v %v", again, err)
	}
	if _, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "tags", Path: "/n"}); !errors.Is(err, store.ErrDataIndexExists) {
		t.Fatalf("another index under the name: %v", err)
	}
	if _, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "third", Path: "/n"}); !errors.Is(err, store.ErrTooManyDataIndexes) {
		t.Fatalf("a third index of two allowed: %v", err)
	}

	storetest.Close(t, s)
	s = storetest.StartWith(t, open, store.Memory{MaxDataIndexes: 2})
	writeIndexed(t, s, 26_000, 26_500)
	checkIndex(t, s, ready(t, s, "who"))

	if err := s.RemoveDataIndex(ctx, "who"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DataIndexNamed("who"); !errors.Is(err, store.ErrDataIndexNotFound) {
		t.Fatalf("after removal: %v", err)
	}
	if err := s.RemoveDataIndex(ctx, "who"); !errors.Is(err, store.ErrDataIndexNotFound) {
		t.Fatalf("second removal: %v", err)
	}
	if got := scanKeys(t, s, who, dataindex.String("/r/3")); len(got) != 0 {
		t.Fatalf("the removed index's postings: %d", len(got))
	}
	number, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "who", Path: "/n"})
	if err != nil || number.ID == who.ID {
		t.Fatalf("registered again: %+v %v", number, err)
	}
	checkIndex(t, s, ready(t, s, "who"))
	checkIndex(t, s, ready(t, s, "tags"))
}

// TestDataIndexRegisteredDuringWrites registers an index while writers
// write on: every event is keyed once, whether the build or the writer
// keyed it.
func TestDataIndexRegisteredDuringWrites(t *testing.T) {
	storetest.Each(t, &pg, testDataIndexRegisteredDuringWrites)
}

func testDataIndexRegisteredDuringWrites(t *testing.T, b storetest.Backend) {
	s := storetest.Start(t, b.New(t))
	writeIndexed(t, s, 0, 12_000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Write(context.Background(), []event.Candidate{indexedEvent(w*1_000_000 + i)}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := s.RegisterDataIndex(context.Background(), dataindex.Definition{Name: "who", Path: "/who"}); err != nil {
		t.Fatal(err)
	}
	x := ready(t, s, "who")
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	if x.From <= 12_000 || s.Durable() <= x.From {
		t.Fatalf("From %d of %d events: the writes did not surround the registration", x.From, s.Durable())
	}
	checkIndex(t, s, x)
}

// TestVerifyChecksDataIndexes verifies a store whose data indexes were
// built in the background and kept by the writer, and then the same store
// with a key too many: the verification passes, then names the index.
func TestVerifyChecksDataIndexes(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		open := b.New(t)
		s := storetest.Start(t, open)
		writeIndexed(t, s, 0, 3_000)
		for _, d := range []dataindex.Definition{{Name: "who", Path: "/who"}, {Name: "tags", Path: "/tags", EventTypes: []string{"io.x.odd"}}} {
			if _, err := s.RegisterDataIndex(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		writeIndexed(t, s, 3_000, 3_500)
		who := ready(t, s, "who")
		ready(t, s, "tags")
		durable := s.Durable()
		storetest.Close(t, s)

		backend, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer backend.Close()
		if n, err := storetest.Verify(ctx, backend); err != nil || n != durable {
			t.Fatalf("verify: %d %v", n, err)
		}
		head, err := backend.Head()
		if err != nil {
			t.Fatal(err)
		}
		head.Commits++
		// A key of an event that lacks it.
		extra := store.Batch{Head: head, Backfill: []store.Posting{{Index: who.ID, Key: dataindex.String("/r/3"), ID: 4}}}
		storetest.Commit(t, backend, extra)
		if _, err := storetest.Verify(ctx, backend); err == nil || err.Error() != "store corrupted: data index who holds 7001 keys of the events, they need 7000" {
			t.Fatalf("verify with a key too many: %v", err)
		}
	})
}
