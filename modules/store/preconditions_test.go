package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// subjectCondition is a query precondition that reads one subject: only
// writes to it affect its verdict. Each call of Holds runs evaluate.
type subjectCondition struct {
	subject  string
	evaluate func(call int32, v *store.View) bool
	calls    atomic.Int32
}

func (c *subjectCondition) Holds(_ context.Context, v *store.View) (bool, error) {
	return c.evaluate(c.calls.Add(1), v), nil
}
func (c *subjectCondition) Affects(w store.Written) bool { return w.Subject == c.subject }
func (c *subjectCondition) ReadsSchemas() bool           { return false }

// writeIf writes one event to subject under condition c, in the background.
func writeIf(s *store.Store, subject string, c store.Condition) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Write(context.Background(), []event.Candidate{candidate(subject, lib+"x", `{}`)},
			[]store.Precondition{{Kind: store.ConditionHolds, Condition: c}})
		done <- err
	}()
	return done
}

func TestConditionIsEvaluatedOutsideTheWriter(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b) // events 0..6
		entered, gate := make(chan struct{}), make(chan struct{})
		c := &subjectCondition{subject: "/slow", evaluate: func(call int32, v *store.View) bool {
			if call == 1 {
				close(entered)
				<-gate // a slow query
			}
			return true
		}}
		done := writeIf(s, "/slow", c)
		<-entered
		// The writer is free: an unrelated write commits while the query runs.
		start := time.Now()
		write(t, s, candidate("/other", lib+"x", `{}`))
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("an unrelated write took %v while a query precondition ran", took)
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := c.calls.Load(); n != 1 {
			t.Fatalf("the condition was evaluated %d times; a write it does not read must not invalidate it", n)
		}
		if s.Durable() != 9 {
			t.Fatalf("%d events, want 9", s.Durable())
		}
	})
}

func TestStaleVerdictIsDecidedAgain(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		entered, gate := make(chan struct{}), make(chan struct{})
		var counts []uint64
		c := &subjectCondition{subject: "/hot", evaluate: func(call int32, v *store.View) bool {
			counts = append(counts, v.Count())
			if call == 1 {
				close(entered)
				<-gate
			}
			return v.Count() == 8 // holds only once the other write is in
		}}
		done := writeIf(s, "/hot", c)
		<-entered
		write(t, s, candidate("/hot", lib+"x", `{}`)) // id 7: changes what the condition reads
		close(gate)
		if err := <-done; err != nil {
			t.Fatalf("the condition, evaluated again on the new state, holds: %v", err)
		}
		if len(counts) != 2 || counts[0] != 7 || counts[1] != 8 {
			t.Fatalf("the condition saw counts %v, want [7 8]", counts)
		}
	})
}

// TestConditionUnderSteadyConflicts sends a write back round after round,
// each verdict going stale before the writer sees it: the condition is
// evaluated outside the writer every time (the writer commits the other
// writes meanwhile), and the write commits once a verdict stands.
func TestConditionUnderSteadyConflicts(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		const stale = 8
		var counts []uint64
		c := &subjectCondition{subject: "/hot", evaluate: func(call int32, v *store.View) bool {
			counts = append(counts, v.Count())
			if call <= stale {
				// The writer is free: this write commits, and the verdict
				// just made goes stale.
				write(t, s, candidate("/hot", lib+"x", `{}`))
			}
			return true
		}}
		if err := <-writeIf(s, "/hot", c); err != nil {
			t.Fatal(err)
		}
		if len(counts) != stale+1 || counts[0] != 7 || counts[stale] != 7+stale {
			t.Fatalf("evaluated on counts %v, want %d rounds from 7 on", counts, stale+1)
		}
		if s.Durable() != 7+stale+1 {
			t.Fatalf("%d events, want %d", s.Durable(), 7+stale+1)
		}
	})
}

// TestVerdictCarriedOverManyWrites writes more events than the live window
// holds while a condition is evaluated: none of them is one the condition
// reads, so its verdict is carried over them (outside the writer) and the
// condition is evaluated once.
func TestVerdictCarriedOverManyWrites(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		entered, gate := make(chan struct{}), make(chan struct{})
		c := &subjectCondition{subject: "/slow", evaluate: func(call int32, v *store.View) bool {
			if call == 1 {
				close(entered)
				<-gate
			}
			return true
		}}
		done := writeIf(s, "/slow", c)
		<-entered
		batch := make([]event.Candidate, 1000)
		for i := range batch {
			batch[i] = candidate("/other", lib+"x", `{}`)
		}
		for range 12 { // 12,000 events: more than the window holds
			write(t, s, batch...)
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := c.calls.Load(); n != 1 {
			t.Fatalf("the condition was evaluated %d times", n)
		}
	})
}
