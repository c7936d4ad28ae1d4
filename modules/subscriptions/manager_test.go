package subscriptions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

var ctx = context.Background()

// clock is a manager's time, moved by the test.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// started returns a manager of the stored subscriptions of s, on the clock.
func started(t *testing.T, s *store.Store, c *clock) *Manager {
	t.Helper()
	m := NewManager(s, 10)
	m.now = c.Now
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(ctx) }) // before the store closes
	return m
}

func orders(t *testing.T, s *store.Store, n int) {
	t.Helper()
	for i := range n {
		storetest.Write(t, s, storetest.Candidate(fmt.Sprintf("/orders/%d", i%5), "io.example.placed", `{}`),
			storetest.Candidate("/other", "io.example.placed", `{}`))
	}
}

func definition(partitions, maxInFlight int) Definition {
	d := Definition{Name: "billing", Subject: "/orders", Options: Defaults()}
	d.Options.Recursive, d.Options.Partitions, d.Options.MaxInFlight = true, partitions, maxInFlight
	d.Options.AcknowledgeTimeout, d.Options.MaxDeliveries = time.Second, 3
	return d
}

func poll(t *testing.T, m *Manager, c *Consumer) []Delivered {
	t.Helper()
	out, _, err := m.Poll(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ack(t *testing.T, m *Manager, ds ...Delivered) Settled {
	t.Helper()
	tokens := make([]Token, len(ds))
	for i, d := range ds {
		tokens[i] = d.Token
	}
	out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCreateReadDelete(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		m := started(t, s, &clock{now: t0})
		d := definition(4, 10)
		info, err := m.Create(ctx, d)
		if err != nil || len(info.Partitions) != 4 || info.Partitions[0].HasPosition {
			t.Fatalf("create: %+v %v", info, err)
		}
		if _, err := m.Create(ctx, d); err != nil {
			t.Fatalf("the same definition again: %v", err)
		}
		other := d
		other.Options.MaxInFlight = 11
		if _, err := m.Create(ctx, other); !errors.Is(err, ErrExists) {
			t.Fatalf("another definition: %v", err)
		}
		m.limit = 1
		second := d
		second.Name = "second"
		if _, err := m.Create(ctx, second); !errors.Is(err, ErrTooMany) {
			t.Fatalf("beyond the limit: %v", err)
		}
		if err := m.Delete(ctx, "billing"); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Get("billing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("read after delete: %v", err)
		}
		it := s.States(spacePartitions, "")
		if it.Next() {
			t.Fatalf("state left after delete: %+v", it.Record())
		}
		it.Close()
	})
}

// TestDeliverSettleRestart delivers in id order per partition within the
// windows, settles out of order, restarts the store and finds the
// unsettled deliveries sent again and the settled ones never, then drains.
func TestDeliverSettleRestart(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
		orders(t, s, 20) // 40 events: /orders/0..4 at even ids, /other at odd
		c := &clock{now: t0}
		m := started(t, s, c)
		if _, err := m.Create(ctx, definition(2, 3)); err != nil {
			t.Fatal(err)
		}
		w1, err := m.Connect(ctx, "billing", "w1")
		if err != nil {
			t.Fatal(err)
		}
		first := poll(t, m, w1)
		if len(first) != 6 {
			t.Fatalf("%d deliveries, want 2 windows of 3", len(first))
		}
		byPartition := map[int][]uint64{}
		for _, d := range first {
			byPartition[d.Token.Partition] = append(byPartition[d.Token.Partition], d.Token.EventID)
			if d.Token.EventID%2 != 0 || d.Token.Attempt != 1 {
				t.Fatalf("delivered %+v", d.Token)
			}
		}
		for p, ids := range byPartition {
			if !slices.IsSorted(ids) {
				t.Fatalf("partition %d out of order: %v", p, ids)
			}
		}
		settled := ack(t, m, first[1], first[4])
		if settled.Done != 2 || len(settled.Stale) != 0 {
			t.Fatalf("acknowledge: %+v", settled)
		}
		if again := ack(t, m, first[1]); again.Done != 0 || len(again.Stale) != 1 {
			t.Fatalf("a second acknowledgement: %+v", again)
		}

		m.Stop(ctx)
		storetest.Close(t, s)
		s = storetest.Start(t, open)
		m = started(t, s, c)
		w1, err = m.Connect(ctx, "billing", "w1")
		if err != nil {
			t.Fatal(err)
		}
		resent := poll(t, m, w1)
		unsettled := map[uint64]bool{}
		for i, d := range first {
			if i != 1 && i != 4 {
				unsettled[d.Token.EventID] = true
			}
		}
		again := 0
		for _, d := range resent {
			if d.Token.EventID == first[1].Token.EventID || d.Token.EventID == first[4].Token.EventID {
				t.Fatalf("a settled event was sent again after the restart: %+v", d.Token)
			}
			if unsettled[d.Token.EventID] {
				again++
				if d.Token.Attempt != 1 {
					t.Fatalf("sent again after the restart with attempt %d, want the same 1", d.Token.Attempt)
				}
			}
		}
		if again != 4 {
			t.Fatalf("after the restart %d deliveries sent again, want the 4 unsettled", again)
		}
		// Drain: every event of /orders once settled, positions at the end.
		seen := map[uint64]bool{first[1].Token.EventID: true, first[4].Token.EventID: true}
		for round := 0; ; round++ {
			if round > 50 {
				t.Fatal("not drained")
			}
			for _, d := range resent {
				seen[d.Token.EventID] = true
			}
			if len(resent) > 0 {
				ack(t, m, resent...)
			}
			resent = poll(t, m, w1)
			if len(resent) == 0 {
				break
			}
		}
		if len(seen) != 20 {
			t.Fatalf("%d events of /orders delivered, want 20", len(seen))
		}
		info, err := m.Get("billing")
		if err != nil || info.InFlight != 0 {
			t.Fatalf("after the drain: %+v %v", info, err)
		}
		for _, p := range info.Partitions {
			if !p.HasPosition || p.Position != 39 {
				t.Fatalf("partition %d at %d (%v), want 39", p.Partition, p.Position, p.HasPosition)
			}
		}
	})
}

func TestReplaceAndRebalance(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	orders(t, s, 10)
	m := started(t, s, &clock{now: t0})
	if _, err := m.Create(ctx, definition(4, 100)); err != nil {
		t.Fatal(err)
	}
	w1, _ := m.Connect(ctx, "billing", "w1")
	old := poll(t, m, w1)
	w2, _ := m.Connect(ctx, "billing", "w2")
	p1, _ := w1.Partitions()
	p2, _ := w2.Partitions()
	if len(p1) != 2 || len(p2) != 2 {
		t.Fatalf("shares %v %v", p1, p2)
	}
	again, _ := m.Connect(ctx, "billing", "w1") // a restarted worker
	select {
	case <-w1.Ended():
	default:
		t.Fatal("the replaced consumer did not end")
	}
	if !errors.Is(w1.Err(), ErrReplaced) {
		t.Fatalf("the replaced consumer's error: %v", w1.Err())
	}
	if settled := ack(t, m, old...); settled.Done != 0 {
		t.Fatalf("tokens of the replaced consumer settled: %+v", settled)
	}
	if err := m.Disconnect(ctx, w2); err != nil {
		t.Fatal(err)
	}
	if p, _ := again.Partitions(); len(p) != 4 {
		t.Fatalf("the consumer left holds %v", p)
	}
}

func TestWriteWithAcknowledge(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		orders(t, s, 2)
		m := started(t, s, &clock{now: t0})
		if _, err := m.Create(ctx, definition(1, 10)); err != nil {
			t.Fatal(err)
		}
		w, _ := m.Connect(ctx, "billing", "w1")
		ds := poll(t, m, w)
		invoice := store.Request{Events: []event.Candidate{storetest.Candidate("/invoices/1", "io.example.invoiced", `{}`)}}
		stale := ds[0].Token
		stale.Epoch++
		before := s.Durable()
		_, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{ds[1].Token, stale}, Write: invoice})
		if !errors.Is(err, ErrNotHeld) || s.Durable() != before {
			t.Fatalf("a write with a stale token: %v, %d events", err, s.Durable())
		}
		out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{ds[0].Token, ds[1].Token}, Write: invoice})
		if err != nil || out.Done != 2 || len(out.Records) != 1 || s.Durable() != before+1 {
			t.Fatalf("a write with acknowledgements: %+v %v", out, err)
		}
		// Events 0 and 2 are of /orders, 1 and 3 of /other: all up to 3 are done.
		if info, _ := m.Get("billing"); info.Partitions[0].Position != 3 {
			t.Fatalf("position %d after the acknowledgements", info.Partitions[0].Position)
		}
	})
}

func TestParkAfterMaxDeliveriesAndInReadOnly(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	orders(t, s, 2) // /orders at ids 0 and 2
	c := &clock{now: t0}
	m := started(t, s, c)
	if _, err := m.Create(ctx, definition(1, 1)); err != nil {
		t.Fatal(err)
	}
	w, _ := m.Connect(ctx, "billing", "w1")
	for attempt := 1; attempt <= 3; attempt++ {
		ds := poll(t, m, w)
		if len(ds) != 1 || ds[0].Token.EventID != 0 || ds[0].Token.Attempt != attempt {
			t.Fatalf("attempt %d: %+v", attempt, ds)
		}
		c.now = c.now.Add(time.Second)
	}
	next := poll(t, m, w) // event 0 parked, its place in the window taken by event 2
	if len(next) != 1 || next[0].Token.EventID != 2 {
		t.Fatalf("after the last attempt: %+v", next)
	}
	parked, err := m.Parked("billing")
	if err != nil || len(parked) != 1 || parked[0].EventID != 0 || parked[0].Attempts != 3 {
		t.Fatalf("parked: %+v %v", parked, err)
	}
	if err := s.EnterReadOnly(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, Definition{Name: "more", Subject: "/", Options: Defaults()}); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("create in read-only mode: %v", err)
	}
	if settled := ack(t, m, next...); settled.Done != 1 { // settling goes on
		t.Fatalf("acknowledge in read-only mode: %+v", settled)
	}
	if info, _ := m.Get("billing"); !info.Partitions[0].HasPosition || info.Partitions[0].Position != 2 || info.Parked != 1 {
		t.Fatalf("after the park and the acknowledgement: %+v", info)
	}
}

func TestReplayParkedEvents(t *testing.T) {
	open := storetest.Pebble.New(t)
	s := storetest.Start(t, open)
	orders(t, s, 2) // /orders at 0 and 2
	c := &clock{now: t0}
	m := started(t, s, c)
	if _, err := m.Create(ctx, definition(1, 10)); err != nil {
		t.Fatal(err)
	}
	w, _ := m.Connect(ctx, "billing", "w1")
	ds := poll(t, m, w)
	if _, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{ds[0].Token}, Action: Park, Reason: "bad"}); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Replay(ctx, "billing", []uint64{0, 2}); err != nil || n != 1 {
		t.Fatalf("replay: %d %v, want the one parked event", n, err)
	}
	m.Stop(ctx)
	storetest.Close(t, s) // the replay survives a restart
	s = storetest.Start(t, open)
	m = started(t, s, c)
	w, _ = m.Connect(ctx, "billing", "w1")
	again := poll(t, m, w)
	if len(again) != 2 || again[0].Token.EventID != 0 || again[1].Token.EventID != 2 {
		t.Fatalf("after the restart: %+v, want the replay first, then event 2 again", again)
	}
	ack(t, m, again...)
	if parked, _ := m.Parked("billing"); len(parked) != 0 {
		t.Fatalf("parked after the replay: %+v", parked)
	}
	if info, _ := m.Get("billing"); info.InFlight != 0 || info.Partitions[0].Position != 3 {
		t.Fatalf("after acknowledging the replay: %+v", info)
	}
}

// TestLayoutVersion: the first subscription records the layout; a store
// whose record names a newer layout is refused, not misread.
func TestLayoutVersion(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		m := started(t, s, &clock{now: t0})
		if _, found, _ := s.State(spaceLayout, "version"); found {
			t.Fatal("a store without subscriptions records a layout")
		}
		if _, err := m.Create(ctx, definition(2, 10)); err != nil {
			t.Fatal(err)
		}
		if r, found, err := s.State(spaceLayout, "version"); err != nil || !found || string(r.Value) != "1" {
			t.Fatalf("layout record %q %v %v", r.Value, found, err)
		}
		if _, err := s.Commit(ctx, store.Request{Changes: []store.Change{{Space: spaceLayout, Key: "version", Value: []byte("2"), Expect: store.AnyVersion}}}); err != nil {
			t.Fatal(err)
		}
		if err := NewManager(s, 10).Load(); !errors.Is(err, ErrNewerLayout) || !strings.Contains(err.Error(), "layout 2, newer than layout 1") {
			t.Fatalf("load of layout 2: %v", err)
		}
	})
}
