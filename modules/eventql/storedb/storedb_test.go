package storedb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
	"github.com/eventstore-service/eventstore/modules/eventql/storedb"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

var emitter = event.NewEmitter(nil)

func candidates(t testing.TB, cs ...eventqltest.Candidate) []event.Candidate {
	t.Helper()
	out := make([]event.Candidate, len(cs))
	for i, c := range cs {
		data, err := jsonscan.Canonicalize(c.Data)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = event.Candidate{Source: c.Source, Subject: c.Subject, Type: c.Type, Data: data}
	}
	return out
}

// libraryStore writes the conformance data set to a new store in dir.
func libraryStore(t *testing.T, dir string) *store.Store {
	s := storetest.Start(t, storetest.PebbleAt(dir, nil))
	if _, err := s.Write(context.Background(), candidates(t, eventqltest.Load(t).Dataset.Events...), nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// query runs a query on the store's current view.
func query(s *store.Store, q string) ([]any, eventql.Stats, error) {
	p, err := eventql.Compile(q)
	if err != nil {
		return nil, eventql.Stats{}, err
	}
	var rows []any
	stats, err := p.Run(context.Background(), storedb.New(s.View(), emitter), eventql.Options{MemoryLimit: 1 << 20}, func(v eventql.Value) error {
		var row any
		err := json.Unmarshal(v.AppendJSON(nil), &row)
		rows = append(rows, row)
		return err
	})
	return rows, stats, err
}

// TestConformanceOnTheStore runs every conformance case through the store,
// once with the recent events in memory and once after a restart, when
// storage and its indexes serve every read.
func TestConformanceOnTheStore(t *testing.T) {
	dir := t.TempDir()
	s := libraryStore(t, dir)
	check := func(where string) {
		for _, tc := range eventqltest.Load(t).Cases {
			rows, _, err := query(s, tc.Query)
			var qe *eventql.Error
			switch {
			case tc.ExpectError != "":
				if !errors.As(err, &qe) || qe.Static != (tc.ExpectError == "static") {
					t.Errorf("%s %s: want a %s error, got %v", where, tc.ID, tc.ExpectError, err)
				}
			case err != nil:
				t.Errorf("%s %s: %v", where, tc.ID, err)
			case !eventqltest.SameRows(rows, tc.Expected, tc.Ordered):
				got, _ := json.Marshal(rows)
				t.Errorf("%s %s: %s\n got %s", where, tc.ID, tc.Query, got)
			}
		}
	}
	check("window")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = storetest.Start(t, storetest.PebbleAt(dir, nil))
	defer s.Close(context.Background())
	check("storage")

	const p = "io.eventsourcingdb.library."
	for q, want := range map[string]int64{
		`FROM e IN events WHERE e.type == "` + p + `reader-registered" PROJECT INTO e.id`:                       2,
		`FROM e IN events WHERE STARTSWITH(e.subject, "/books/4") PROJECT INTO e.id`:                            4,
		`FROM e IN events WHERE STARTSWITH(e.subject, "/readers/") PROJECT INTO e.id`:                           2,
		`FROM e IN events WHERE e.subject == "/books/42" AND e.type == "` + p + `book-borrowed" PROJECT INTO 1`: 2,
		`FROM e IN events WHERE e.subject == "/books/7" OR e.type == "` + p + `book-returned" PROJECT INTO 1`:   3,
		`FROM e IN events WHERE e.id AS INT >= 9 PROJECT INTO 1`:                                                2,
		`FROM e IN events WHERE e.data.price > 1 PROJECT INTO 1`:                                                11,
	} {
		_, stats, err := query(s, q)
		if err != nil || stats.EventsLoaded != want {
			t.Errorf("%s: loaded %d events (error %v), want %d", q, stats.EventsLoaded, err, want)
		}
	}
}

// writeGuarded writes the probe event guarded by an EventQL query and
// returns the HTTP status the outcome maps to.
func writeGuarded(t *testing.T, s *store.Store, c eventqltest.Candidate, q string, opts eventql.Options) int {
	t.Helper()
	p, err := eventql.Compile(q)
	if err != nil {
		return 400
	}
	pre := store.Precondition{Kind: store.ConditionHolds, Condition: storedb.NewCondition(p, emitter, opts)}
	_, err = s.Write(context.Background(), candidates(t, c), []store.Precondition{pre})
	var invalid *store.InvalidPreconditionError
	switch {
	case err == nil:
		return 200
	case errors.Is(err, store.ErrPreconditionFailed):
		return 409
	case errors.As(err, &invalid):
		return 400
	}
	t.Fatalf("write: %v", err)
	return 0
}

func TestPreconditionCasesOnTheStore(t *testing.T) {
	s := libraryStore(t, t.TempDir())
	defer s.Close(context.Background())
	c := eventqltest.Load(t)
	for _, tc := range c.PreconditionCases {
		before := s.Durable()
		status := writeGuarded(t, s, c.PreconditionProbe, tc.Query, eventql.Options{MemoryLimit: 1 << 20})
		if status != tc.ExpectStatus {
			t.Errorf("%s: status %d, want %d", tc.ID, status, tc.ExpectStatus)
		}
		if written := s.Durable() - before; (status == 200) != (written == 1) {
			t.Errorf("%s: status %d wrote %d events", tc.ID, status, written)
		}
	}
}

func TestPreconditionTimeLimit(t *testing.T) {
	s := libraryStore(t, t.TempDir())
	defer s.Close(context.Background())
	probe := eventqltest.Load(t).PreconditionProbe
	p, err := eventql.Compile(`FROM a IN events FROM b IN events FROM c IN events FROM d IN events FROM f IN events FROM g IN events PROJECT INTO COUNT() == 0`)
	if err != nil {
		t.Fatal(err)
	}
	pre := store.Precondition{Kind: store.ConditionHolds, Condition: storedb.NewCondition(p, emitter, eventql.Options{TimeLimit: 50 * time.Millisecond})}
	start := time.Now()
	_, err = s.Write(context.Background(), candidates(t, probe), []store.Precondition{pre})
	if err == nil || err.Error() != "invalid precondition: query failed: time limit of 50ms exceeded" {
		t.Fatalf("error %v, want the time limit", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("the writer was held for %v", elapsed)
	}
	if _, err := s.Write(context.Background(), candidates(t, probe), nil); err != nil {
		t.Fatalf("the writer did not go on: %v", err)
	}
}

// TestPreconditionTimeLimitSpansRounds keeps sending a write back (every
// round another write changes what its condition reads): its evaluations
// together end at the condition's time limit, counted from the first, with
// the time limit's error; the writes beside it all commit.
func TestPreconditionTimeLimitSpansRounds(t *testing.T) {
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	p, err := eventql.Compile(`FROM e IN events WHERE e.subject == "/hot" PROJECT INTO COUNT() >= 0`)
	if err != nil {
		t.Fatal(err)
	}
	hot := []event.Candidate{{Source: "https://x.example", Subject: "/hot", Type: "io.example.x", Data: []byte(`{}`)}}
	c := &countingCondition{Condition: storedb.NewCondition(p, emitter, eventql.Options{TimeLimit: 300 * time.Millisecond})}
	c.after = func() { // each verdict goes stale before the writer sees it
		if _, err := s.Write(context.Background(), hot, nil); err != nil {
			t.Error(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	_, err = s.Write(context.Background(), hot, []store.Precondition{{Kind: store.ConditionHolds, Condition: c}})
	took := time.Since(start)
	if err == nil || err.Error() != "invalid precondition: query failed: time limit of 300ms exceeded" {
		t.Fatalf("error %v, want the time limit", err)
	}
	if n := c.evaluations.Load(); n < 5 || took > 5*time.Second {
		t.Fatalf("%d evaluations in %v", n, took)
	}
	if got := s.Durable(); got != uint64(c.evaluations.Load()) {
		t.Fatalf("%d events, want the %d writes beside the condition", got, c.evaluations.Load())
	}
}

// TestPreconditionRace lets concurrent writers race for the same subject,
// each guarded by COUNT() == 0 on it: exactly one may win every round,
// whether the writes share a commit group or not.
func TestPreconditionRace(t *testing.T) {
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer s.Close(context.Background())
	const writers, rounds = 16, 20
	for round := range rounds {
		subject := fmt.Sprintf("/race/%d", round)
		guard := fmt.Sprintf(`FROM e IN events WHERE e.subject == "%s" PROJECT INTO COUNT() == 0`, subject)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners int
			other   []int
		)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := eventqltest.Candidate{Source: "https://x.example", Subject: subject, Type: "io.example.claimed", Data: []byte(fmt.Sprintf(`{"w":%d}`, w))}
				status := writeGuarded(t, s, c, guard, eventql.Options{MemoryLimit: 1 << 20})
				mu.Lock()
				defer mu.Unlock()
				switch status {
				case 200:
					winners++
				case 409:
				default:
					other = append(other, status)
				}
			}()
		}
		wg.Wait()
		if winners != 1 || len(other) > 0 {
			t.Fatalf("round %d: %d winners, other outcomes %v", round, winners, other)
		}
	}
	if got := s.Durable(); got != rounds {
		t.Fatalf("%d events after %d rounds", got, rounds)
	}
}

// countingCondition counts the evaluations of a condition.
type countingCondition struct {
	*storedb.Condition
	evaluations atomic.Int32
	after       func() // unless nil, runs after each evaluation
}

func (c *countingCondition) Holds(ctx context.Context, v *store.View) (bool, error) {
	c.evaluations.Add(1)
	holds, err := c.Condition.Holds(ctx, v)
	if c.after != nil {
		c.after()
	}
	return holds, err
}

// TestHeavyPreconditionHoldsUpOnlyItsOwnWrite runs a slow query
// precondition on one subject while plain writes go to another: they are
// not held up, and, as they are not among what the query reads, the query
// is evaluated once.
func TestHeavyPreconditionHoldsUpOnlyItsOwnWrite(t *testing.T) {
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer s.Close(context.Background())
	batch := make([]event.Candidate, 1000)
	for i := range batch {
		batch[i] = event.Candidate{Source: "https://x.example", Subject: "/hot", Type: "io.example.x", Data: []byte(`{}`)}
	}
	for range 3 {
		if _, err := s.Write(context.Background(), batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	p, err := eventql.Compile(`FROM a IN events FROM b IN events WHERE a.subject == "/hot" AND b.subject == "/hot" PROJECT INTO COUNT() >= 0`)
	if err != nil {
		t.Fatal(err)
	}
	c := &countingCondition{Condition: storedb.NewCondition(p, emitter, eventql.Options{TimeLimit: time.Minute})}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.Write(context.Background(), []event.Candidate{{Source: "https://x.example", Subject: "/hot", Type: "io.example.x", Data: []byte(`{}`)}},
			[]store.Precondition{{Kind: store.ConditionHolds, Condition: c}})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	var slowest time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		if _, err := s.Write(context.Background(), []event.Candidate{{Source: "https://x.example", Subject: "/cold", Type: "io.example.x", Data: []byte(`{}`)}}, nil); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if n := c.evaluations.Load(); n != 1 {
		t.Fatalf("the query was evaluated %d times; writes it does not read must not invalidate it", n)
	}
	if slowest > took/2 {
		t.Fatalf("a plain write took %v while a %v precondition ran: the writer was held up", slowest, took)
	}
	t.Logf("precondition %v, slowest plain write beside it %v", took, slowest)
}
