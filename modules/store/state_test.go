package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

const space = "test.feature"

func put(key, value string, expect uint64) store.Change {
	return store.Change{Space: space, Key: key, Value: []byte(value), Expect: expect}
}

func commit(t *testing.T, s *store.Store, r store.Request) []event.Record {
	t.Helper()
	records, err := s.Commit(context.Background(), r)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return records
}

func stateOf(t *testing.T, s *store.Store, key string) (store.StateRecord, bool) {
	t.Helper()
	r, found, err := s.State(space, key)
	if err != nil {
		t.Fatal(err)
	}
	return r, found
}

// keys lists the records of the space under prefix as key=value.
func keys(t *testing.T, s *store.Store, prefix string) string {
	t.Helper()
	var out []string
	it := s.States(space, prefix)
	for it.Next() {
		out = append(out, it.Record().Key+"="+string(it.Record().Value))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ",")
}

// TestFeatureState puts, fences, deletes and lists records of feature
// state, commits them atomically with events, and finds them after a
// restart with versions that go on rising.
func TestFeatureState(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
		ctx := context.Background()

		commit(t, s, store.Request{Changes: []store.Change{put("b", "1", 0), put("a/2", "x", 0), put("a/1", "y", 0)}})
		first, found := stateOf(t, s, "b")
		if !found || string(first.Value) != "1" || first.Version == 0 {
			t.Fatalf("record after a put: %+v %v", first, found)
		}
		if got := keys(t, s, "a/"); got != "a/1=y,a/2=x" {
			t.Fatalf("records under a/: %s", got)
		}

		// A stale fence changes nothing, also not the events beside it.
		before := s.Durable()
		_, err := s.Commit(ctx, store.Request{Events: []event.Candidate{candidate("/x", lib+"x", `{}`)}, Changes: []store.Change{put("b", "2", 0)}})
		var conflict *store.StateConflictError
		if !errors.As(err, &conflict) || conflict.Actual != first.Version || conflict.Expected != 0 {
			t.Fatalf("put over an existing record expecting none: %v", err)
		}
		if s.Durable() != before {
			t.Fatal("the events of a refused request were written")
		}
		// A failed precondition changes no state.
		_, err = s.Commit(ctx, store.Request{
			Events:        []event.Candidate{candidate("/x", lib+"x", `{}`)},
			Preconditions: []store.Precondition{{Kind: store.SubjectOnEventID, Subject: "/x", EventID: 99}},
			Changes:       []store.Change{put("b", "3", first.Version)},
		})
		if !errors.Is(err, store.ErrPreconditionFailed) {
			t.Fatalf("write with a failing precondition: %v", err)
		}
		if r, _ := stateOf(t, s, "b"); string(r.Value) != "1" {
			t.Fatalf("a refused request changed the state to %q", r.Value)
		}

		// Both or neither: events and the change commit together.
		records := commit(t, s, store.Request{Events: []event.Candidate{candidate("/x", lib+"x", `{}`)}, Changes: []store.Change{put("b", "4", first.Version)}})
		second, _ := stateOf(t, s, "b")
		if len(records) != 1 || string(second.Value) != "4" || second.Version <= first.Version {
			t.Fatalf("after a write with a change: %d records, %+v", len(records), second)
		}

		// A request's own rule decides last; Applied runs only once it is durable.
		var applied atomic.Int32
		refuse := errors.New("refused by the feature")
		_, err = s.Commit(ctx, store.Request{
			Changes: []store.Change{put("c", "1", 0)},
			Check:   func(*store.Group) error { return refuse },
			Applied: func() { applied.Add(1) },
		})
		if !errors.Is(err, refuse) || applied.Load() != 0 {
			t.Fatalf("request refused by its check: %v, applied %d", err, applied.Load())
		}
		if _, found := stateOf(t, s, "c"); found {
			t.Fatal("a refused request put its record")
		}
		commit(t, s, store.Request{
			Changes: []store.Change{{Space: space, Key: "b", Expect: second.Version}}, // delete
			Check: func(g *store.Group) error {
				if r, found, err := g.State(space, "b"); err != nil || !found || r.Version != second.Version {
					t.Errorf("the group's view of b: %+v %v %v", r, found, err)
				}
				return nil
			},
			Applied: func() { applied.Add(1) },
		})
		if _, found := stateOf(t, s, "b"); found || applied.Load() != 1 {
			t.Fatalf("after a delete: found %v, applied %d", found, applied.Load())
		}

		for _, c := range []store.Change{{Space: "", Key: "k"}, {Space: "a\x00b", Key: "k"}, {Space: space, Key: "\xff"}, {Space: space, Key: "a\x00"}} {
			if _, err := s.Commit(ctx, store.Request{Changes: []store.Change{c}}); err == nil || !s.Writable() {
				t.Fatalf("a change of %q/%q was taken (or stopped the store: writable %v)", c.Space, c.Key, s.Writable())
			}
		}

		storetest.Close(t, s)
		s = storetest.Start(t, open)
		if got := keys(t, s, ""); got != "a/1=y,a/2=x" {
			t.Fatalf("records after a restart: %s", got)
		}
		commit(t, s, store.Request{Changes: []store.Change{put("b", "5", 0)}})
		if r, _ := stateOf(t, s, "b"); r.Version <= second.Version {
			t.Fatalf("version %d after a restart, not above %d", r.Version, second.Version)
		}
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
	})
}

// holdWriter has the writer decide a request whose Check waits until
// release is called, so that the requests sent meanwhile queue into one
// group behind it; it returns once the writer holds.
func holdWriter(t *testing.T, s *store.Store) (release func()) {
	t.Helper()
	entered, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := s.Commit(context.Background(), store.Request{Check: func(*store.Group) error {
			close(entered)
			<-gate
			return nil
		}})
		done <- err
	}()
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("the request that held the writer: %v", err)
		}
	}
}

// TestFeatureStateIsFollowed checks that a node of a shared backend learns

// TestViewStates reads records of feature state in one view while a
// commit changes them in between: every read of the view sees them as
// they were when it began, and a read after it the commit's.
func TestViewStates(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		any := store.AnyVersion
		commit(t, s, store.Request{Changes: []store.Change{put("a", "1", any), put("b/1", "1", any), put("b/2", "1", any)}})
		err := s.ViewStates(func(r store.StateReader) error {
			if a, _, err := r.State(space, "a"); err != nil || string(a.Value) != "1" {
				return fmt.Errorf("a in the view: %q %v", a.Value, err)
			}
			commit(t, s, store.Request{Changes: []store.Change{put("a", "2", any), put("b/1", "2", any),
				{Space: space, Key: "b/2", Expect: any}, put("b/3", "2", any)}})
			if b1, _, err := r.State(space, "b/1"); err != nil || string(b1.Value) != "1" {
				return fmt.Errorf("b/1 in the view after the commit: %q %v", b1.Value, err)
			}
			var got []string
			it := r.States(space, "b/")
			for it.Next() {
				got = append(got, it.Record().Key+"="+string(it.Record().Value))
			}
			if err := it.Close(); err != nil || strings.Join(got, ",") != "b/1=1,b/2=1" {
				return fmt.Errorf("b/ in the view after the commit: %v %v", got, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(t, s, "b/"); got != "b/1=2,b/3=2" {
			t.Fatalf("b/ after the view: %s", got)
		}
	})
}

// of another node's changes of feature state.
func TestFeatureStateIsFollowed(t *testing.T) {
	open := storetest.Postgres(&pg).New(t)
	a := storetest.Start(t, open)
	b := store.New(open, zap.NewNop(), nil, store.Memory{})
	changed := make(chan struct{}, 16)
	b.OnStateChanged([]string{space}, func() error {
		changed <- struct{}{}
		return nil
	})
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer storetest.Close(t, b)
	commit(t, a, store.Request{Changes: []store.Change{put("k", "v", 0)}})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the other node was not told of the change")
	}
	if r, found, err := b.State(space, "k"); err != nil || !found || string(r.Value) != "v" {
		t.Fatalf("the other node reads %+v %v %v", r, found, err)
	}
}

// TestStateIsFollowedBySpace checks that a node calls the followers of the
// spaces another node changed and no other, the schemas' among them: a
// change of another space does not read the schemas again under the
// head's lock.
func TestStateIsFollowedBySpace(t *testing.T) {
	open := storetest.Postgres(&pg).New(t)
	a := storetest.Start(t, open)
	b := store.New(open, zap.NewNop(), nil, store.Memory{})
	const other = "test.other"
	var calls = map[string]*atomic.Int64{space: {}, other: {}, store.SchemaSpace: {}, "both": {}}
	for _, spaces := range [][]string{{space}, {other}, {store.SchemaSpace}, {other, space}} {
		n := calls[spaces[0]]
		if len(spaces) > 1 {
			n = calls["both"]
		}
		b.OnStateChanged(spaces, func() error {
			n.Add(1)
			return nil
		})
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer storetest.Close(t, b)
	// b follows a's commits when it commits itself, before its commit returns.
	follow := func() { commit(t, b, store.Request{Events: []event.Candidate{candidate("/follow", lib+"x", `{}`)}}) }
	check := func(step string, want map[string]int64) {
		t.Helper()
		for name, n := range want {
			if got := calls[name].Load(); got != n {
				t.Errorf("%s: the follower of %s was called %d times, want %d", step, name, got, n)
			}
		}
	}
	follow()
	check("no change", map[string]int64{space: 0, other: 0, store.SchemaSpace: 0, "both": 0})

	commit(t, a, store.Request{Changes: []store.Change{put("k", "v", 0)}})
	follow()
	check("a change of one space", map[string]int64{space: 1, other: 0, store.SchemaSpace: 0, "both": 1})

	commit(t, a, store.Request{Changes: []store.Change{{Space: other, Key: "k", Value: []byte("v")}}})
	follow()
	check("a change of another space", map[string]int64{space: 1, other: 1, store.SchemaSpace: 0, "both": 2})

	if err := a.RegisterSchema(context.Background(), lib+"typed", mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)); err != nil {
		t.Fatal(err)
	}
	follow()
	check("a schema registered", map[string]int64{space: 1, other: 1, store.SchemaSpace: 1, "both": 2})
	var conflict *store.CandidateConflictError
	if _, err := b.Write(context.Background(), []event.Candidate{candidate("/typed", lib+"typed", `{}`)}, nil); !errors.As(err, &conflict) {
		t.Fatalf("a write against the schema registered on the other node: %v", err)
	}

	commit(t, a, store.Request{Changes: []store.Change{{Space: other, Key: "k", Expect: store.AnyVersion}}}) // a delete
	follow()
	check("a delete", map[string]int64{space: 1, other: 2, store.SchemaSpace: 1, "both": 3})
}

// TestStateAloneWakesNoObserver checks that a commit that changed feature
// state alone does not close Changed, on its node or another (their
// observers and consumers have nothing new to read), while one that added
// events does.
func TestStateAloneWakesNoObserver(t *testing.T) {
	open := storetest.Postgres(&pg).New(t)
	a, b := storetest.Start(t, open), storetest.Start(t, open)
	changed, own := b.Changed(), a.Changed()
	commit(t, a, store.Request{Changes: []store.Change{put("k", "v", 0)}})
	select {
	case <-own:
		t.Fatal("a commit of state alone woke the observers of its own node")
	default:
	}
	states := a.DurableHead().States
	for deadline := time.Now().Add(5 * time.Second); b.DurableHead().States != states; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other node did not follow the change of state")
		}
	}
	select {
	case <-changed:
		t.Fatal("a commit of state alone on another node woke the observers")
	default:
	}
	commit(t, a, store.Request{Events: []event.Candidate{candidate("/wake", lib+"x", `{}`)}})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("a commit of an event on another node did not wake the observers")
	}
	if b.Durable() != 1 {
		t.Fatalf("the other node has %d durable events, want 1", b.Durable())
	}
}

// TestInReadOnly checks that read-only mode refuses every request but those
// marked InReadOnly without events.
func TestInReadOnly(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	ctx := context.Background()
	if err := s.EnterReadOnly(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, store.Request{Changes: []store.Change{put("a", "1", 0)}}); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("a change in read-only mode: %v", err)
	}
	if _, err := s.Commit(ctx, store.Request{InReadOnly: true, Events: []event.Candidate{candidate("/a", lib+"x", `{}`)}, Changes: []store.Change{put("a", "1", 0)}}); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("events marked InReadOnly: %v", err)
	}
	commit(t, s, store.Request{InReadOnly: true, Changes: []store.Change{put("a", "1", 0)}})
	if r, found := stateOf(t, s, "a"); !found || string(r.Value) != "1" {
		t.Fatal("the change marked InReadOnly was not made")
	}
}
