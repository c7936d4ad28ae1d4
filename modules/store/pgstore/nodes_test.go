package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestNodesRaceOnPreconditions runs writers on two stores of one database
// that race on one subject with isSubjectOnEventId: every round has exactly
// one winner, and the log is contiguous with an unbroken chain.
func TestNodesRaceOnPreconditions(t *testing.T) {
	url := pg.Database(t)
	const rounds = 20
	storetest.RaceOnPreconditions(t, []*store.Store{node(t, url), node(t, url)}, 12, rounds)
	if n := verify(t, url); n != rounds+1 {
		t.Fatalf("%d events after %d rounds, want %d", n, rounds, rounds+1)
	}
}

// TestNodeFollowsTheOther writes on one node and checks that the other
// wakes up, reads the events and enforces the schemas registered there.
func TestNodeFollowsTheOther(t *testing.T) {
	url := pg.Database(t)
	a, b := node(t, url), node(t, url)
	changed := b.Changed()
	if _, err := a.Write(context.Background(), []event.Candidate{candidate("/follow", `{"n":1}`)}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the other node was not woken up by the commit")
	}
	if b.Durable() != 1 {
		t.Fatalf("the other node has %d durable events, want 1", b.Durable())
	}
	it, err := b.Read(store.ReadOptions{Subject: "/follow"})
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() || it.Record().ID != 0 || it.Next() {
		t.Fatal("the other node does not read the event")
	}
	it.Close()

	sch, err := schema.Compile([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterSchema(context.Background(), "io.example.pg", sch); err != nil {
		t.Fatal(err)
	}
	var conflict *store.CandidateConflictError
	if _, err := b.Write(context.Background(), []event.Candidate{candidate("/follow", `{"n":"text"}`)}, nil); !errors.As(err, &conflict) {
		t.Fatalf("a write violating the schema registered on the other node: %v", err)
	}
	if err := b.RegisterSchema(context.Background(), "io.example.pg", sch); !errors.Is(err, store.ErrSchemaExists) {
		t.Fatalf("a second registration on the other node: %v", err)
	}
	if _, err := b.Write(context.Background(), []event.Candidate{candidate("/follow", `{"n":2}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if n := verify(t, url); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}

// TestReadYourWritesAcrossNodes reads every event acknowledged by one node
// at once on the other, which may not have been woken up yet; its list of
// data indexes counts the event too.
func TestReadYourWritesAcrossNodes(t *testing.T) {
	url := pg.Database(t)
	nodes := []*store.Store{node(t, url), node(t, url)}
	for i := 0; i < 50; i++ {
		writer, reader := nodes[i%2], nodes[(i+1)%2]
		records, err := writer.Write(context.Background(), []event.Candidate{candidate("/ryw", fmt.Sprintf(`{"i":%d}`, i))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := records[0].ID
		it, err := reader.Read(store.ReadOptions{Subject: "/ryw", Lower: &store.Bound{ID: id, Inclusive: true}})
		if err != nil {
			t.Fatal(err)
		}
		if !it.Next() || it.Record().ID != id {
			t.Fatalf("write %d: event %d acknowledged by one node is not read on the other", i, id)
		}
		it.Close()
		if latest, found, err := reader.LatestID("/ryw", "io.example.pg"); err != nil || !found || latest != id {
			t.Fatalf("write %d: the other node's latest id is %d %v %v, want %d", i, latest, found, err, id)
		}
		if _, events, err := reader.DataIndexes(); err != nil || events <= id {
			t.Fatalf("write %d: the other node lists its data indexes over %d events (%v), want %d", i, events, err, id+1)
		}
	}
}

// TestEventTypesAcrossNodes reads the event types on one node at once after
// a registration acknowledged by the other, which may not have followed it.
func TestEventTypesAcrossNodes(t *testing.T) {
	url := pg.Database(t)
	nodes := []*store.Store{node(t, url), node(t, url)}
	sch, err := schema.Compile([]byte(`{"type":"object","properties":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		registrar, reader := nodes[i%2], nodes[(i+1)%2]
		eventType := fmt.Sprintf("io.example.pg.t%d", i)
		if err := registrar.RegisterSchema(context.Background(), eventType, sch); err != nil {
			t.Fatal(err)
		}
		if et, found, err := reader.EventType(eventType); err != nil || !found || !et.Phantom || et.Schema == nil {
			t.Fatalf("registration %d: read-event-type on the other node: %+v %v %v", i, et, found, err)
		}
		types, err := reader.EventTypes()
		if err != nil || len(types) != i+1 {
			t.Fatalf("registration %d: the other node lists %d event types (%v), want %d", i, len(types), err, i+1)
		}
	}
}

// TestNodeStartsWhileAnotherWrites starts nodes one after the other while
// another node commits all the time: each start must succeed, although the
// log grows between its reading the head and checking the events there.
func TestNodeStartsWhileAnotherWrites(t *testing.T) {
	url := pg.Database(t)
	writer := node(t, url)
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := writer.Write(context.Background(), []event.Candidate{candidate("/busy", `{"n":1}`)}, nil); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		node(t, url)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBeginReadsWhatOthersCommitted takes the head's lock as a second node
// would and expects the ids, subjects and types of the events committed
// since a position with it, or nil past followLimit.
func TestBeginReadsWhatOthersCommitted(t *testing.T) {
	url := pg.Database(t)
	a := node(t, url)
	want := writeEach(t, a, "/begin/0", "/begin/1", "/begin/2")
	b, err := opener(url)()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for known := uint64(0); known <= 3; known++ {
		tx, err := b.Begin(context.Background(), known)
		if err != nil {
			t.Fatal(err)
		}
		followed := tx.Followed()
		tx.Rollback()
		if uint64(len(followed)) != 3-known {
			t.Fatalf("from %d: %d events followed, want %d", known, len(followed), 3-known)
		}
		for i, w := range followed {
			r := want[known+uint64(i)]
			if w.Record.ID != r.ID || w.Record.JSON != nil || w.Subject != fmt.Sprintf("/begin/%d", r.ID) || w.Type != "io.example.pg" {
				t.Fatalf("from %d: event %d followed as %+v, stored as %s", known, i, w, r.JSON)
			}
		}
	}
	// Beyond the limit the store reads them itself.
	batch := make([]event.Candidate, 1000)
	for i := range batch {
		batch[i] = candidate("/begin/many", `{"n":1}`)
	}
	for written := 3; written <= pgstore.FollowLimit; written += len(batch) {
		if _, err := a.Write(context.Background(), batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := b.Begin(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if tx.Followed() != nil {
		t.Fatalf("%d events followed beyond the limit", len(tx.Followed()))
	}
}

// quiet hides the notifications of other nodes' commits from a store, so
// that it learns of them when it commits (or polls).
type quiet struct{ store.Backend }

func (quiet) Changes() <-chan struct{} { return make(chan struct{}) }

// TestOthersEventsAreServedFromMemory commits on one node, then on a
// second, which follows the first node's events when it takes the head's
// lock and reads their records for its first reader: with the database
// stopped, the second node still serves all of them, from its window of
// recent events, byte for byte.
func TestOthersEventsAreServedFromMemory(t *testing.T) {
	cluster, url := ownCluster(t, "window")
	a := node(t, url)
	b := storetest.Start(t, func() (store.Backend, error) {
		backend, err := opener(url)()
		return quiet{backend}, err
	})
	want := writeEach(t, a, "/window/0", "/window/1", "/window/2")
	want = append(want, writeEach(t, b, "/window/b")...)
	if want[3].ID != 3 {
		t.Fatalf("the second node wrote id %d, want 3", want[3].ID)
	}
	if _, err := scanAll(b, store.Scan{From: 0, To: 3}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	got, err := scanAll(b, store.Scan{From: 0, To: 3})
	if err != nil {
		t.Fatalf("read with the database stopped: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d events with the database stopped, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || !bytes.Equal(got[i].JSON, want[i].JSON) {
			t.Fatalf("event %d read as %d %s, written as %s", i, got[i].ID, got[i].JSON, want[i].JSON)
		}
	}
}

// scans hides other nodes' commits from a store except those its commits
// follow, and counts the store's scans.
type scans struct {
	store.Backend
	n atomic.Int64
}

func (*scans) Changes() <-chan struct{} { return nil }

func (c *scans) Scan(s store.Scan) store.RecordIterator {
	c.n.Add(1)
	return c.Backend.Scan(s)
}

// TestOthersRecordsAreReadOnce commits on one node, then on a second that
// follows those events by name when it takes the head's lock: it reads
// none of their records until a reader asks, and then once for all readers.
func TestOthersRecordsAreReadOnce(t *testing.T) {
	url := pg.Database(t)
	a := node(t, url)
	var backend *scans
	b := storetest.Start(t, func() (store.Backend, error) {
		be, err := opener(url)()
		backend = &scans{Backend: be}
		return backend, err
	})
	want := writeEach(t, a, "/lazy/0", "/lazy/1", "/lazy/2")
	want = append(want, writeEach(t, b, "/lazy/b")...)
	if n := backend.n.Load(); n != 0 {
		t.Fatalf("the commit that followed the other node's events read records %d times", n)
	}
	for range 10 {
		got, err := scanAll(b, store.Scan{Subject: "/", Recursive: true, From: 0, To: 3})
		if err != nil || len(got) != len(want) {
			t.Fatalf("read %d events, %v; want %d", len(got), err, len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID || !bytes.Equal(got[i].JSON, want[i].JSON) {
				t.Fatalf("event %d read as %d %s, written as %s", i, got[i].ID, got[i].JSON, want[i].JSON)
			}
		}
	}
	if n := backend.n.Load(); n != 1 {
		t.Fatalf("10 reads read the other node's records %d times, want once", n)
	}
}

// counting counts the heads read from a backend.
type counting struct {
	store.Backend
	heads atomic.Int64
}

func (c *counting) Head() (store.Head, error) {
	c.heads.Add(1)
	return c.Backend.Head()
}

// TestObserversDoNotAskTheDatabase reads the durable events on a node, as
// an observer does after every commit, 100 times: the node does not ask
// the database for its head (the timer that looks for other nodes' commits
// may, once or twice). A read beyond the durable head asks it, and sees
// what another node committed that this one has not followed yet.
func TestObserversDoNotAskTheDatabase(t *testing.T) {
	url := pg.Database(t)
	var backend *counting
	a := storetest.Start(t, func() (store.Backend, error) {
		b, err := opener(url)()
		backend = &counting{Backend: quiet{b}}
		return backend, err
	})
	writeEach(t, a, "/observed", "/observed", "/observed")
	durable := a.Durable()
	before := backend.heads.Load()
	for i := 0; i < 100; i++ {
		if got, err := scanAll(a, store.Scan{Subject: "/", Recursive: true, From: 0, To: durable - 1}); err != nil || len(got) != 3 {
			t.Fatalf("read of the durable events: %d events, %v", len(got), err)
		}
	}
	if asked := backend.heads.Load() - before; asked > 2 {
		t.Fatalf("100 reads of durable events asked the database for its head %d times", asked)
	}

	writeEach(t, node(t, url), "/observed")
	before = backend.heads.Load()
	if got, err := scanAll(a, store.Scan{Subject: "/observed", From: 0, To: math.MaxUint64}); err != nil || len(got) != 4 {
		t.Fatalf("read beyond the durable head after another node's write: %d events, %v", len(got), err)
	}
	if backend.heads.Load() == before {
		t.Fatal("a read beyond the durable head did not ask the database")
	}
}

// writeEach writes an event to each subject on s, one request each, and
// returns their records.
func writeEach(t testing.TB, s *store.Store, subjects ...string) []event.Record {
	t.Helper()
	var written []event.Record
	for i, subject := range subjects {
		records, err := s.Write(context.Background(), []event.Candidate{candidate(subject, fmt.Sprintf(`{"n":%d}`, i))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, records...)
	}
	return written
}

// scanAll returns the records s reads for sc.
func scanAll(s *store.Store, sc store.Scan) ([]event.Record, error) {
	it := s.Scan(sc)
	var records []event.Record
	for it.Next() {
		records = append(records, event.Record{ID: it.Record().ID, JSON: bytes.Clone(it.Record().JSON)})
	}
	return records, it.Close()
}
