package subscriptions

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestManagerModel drives a Manager on a real store with random
// interleavings of writes, consumer arrivals, departures and replacements,
// polls, settles (current and stale tokens), timeouts and restarts of the
// store, and checks: no event is delivered again once a settle of it
// succeeded; first deliveries come in id order per partition; the
// partitions are spread over the connected consumers with shares that
// differ by at most one; and after a drain every event of the subscription
// was settled (acknowledged or parked).
func TestManagerModel(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runManagerModel(t, seed) })
	}
}

func runManagerModel(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 99))
	open := storetest.Pebble.New(t)
	s := storetest.Start(t, open)
	c := &clock{now: t0}
	m := started(t, s, c)
	batch := 1 + r.IntN(6) // deliveries per poll: the rest comes with the next
	m.batch = batch
	d := definition(1+r.IntN(4), 1+r.IntN(4))
	if _, err := m.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var (
		consumers   = map[string]*Consumer{}
		outstanding = map[string][]Token{} // by consumer: tokens it received
		settled     = map[uint64]bool{}    // a settle of it succeeded
		firstSeen   = map[uint64]bool{}
		lastFirst   = map[int]uint64{}
		matching    = map[uint64]bool{}
		replaying   = map[uint64]bool{} // replayed: its deliveries are no first ones
	)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	received := func(name string, ds []Delivered) {
		for _, dv := range ds {
			id := dv.Token.EventID
			if settled[id] {
				fail("event %d delivered to %s after it was settled", id, name)
			}
			if !firstSeen[id] && !replaying[id] {
				if last, ok := lastFirst[dv.Token.Partition]; ok && id <= last {
					fail("partition %d: first delivery of %d after that of %d", dv.Token.Partition, id, last)
				}
				firstSeen[id], lastFirst[dv.Token.Partition] = true, id
			}
			outstanding[name] = append(outstanding[name], dv.Token)
		}
	}
	checkSpread := func() {
		counts := map[string]int{}
		for name, cons := range consumers {
			ps, _ := cons.Partitions()
			counts[name] = len(ps)
		}
		lo, hi := d.Options.Partitions, 0
		total := 0
		for _, n := range counts {
			lo, hi, total = min(lo, n), max(hi, n), total+n
		}
		if len(consumers) > 0 && (hi-lo > 1 || total != d.Options.Partitions) {
			fail("shares %v of %d partitions", counts, d.Options.Partitions)
		}
	}
	names := []string{"w0", "w1", "w2"}
	for range 150 {
		switch k := r.IntN(10); {
		case k < 2:
			for range 1 + r.IntN(6) {
				rec := storetest.Write(t, s, storetest.Candidate(fmt.Sprintf("/orders/%d", r.IntN(8)), "io.example.placed", `{}`),
					storetest.Candidate("/other", "io.example.placed", `{}`))
				matching[rec[0].ID] = true
			}
		case k < 3: // arrive, or replace
			name := names[r.IntN(len(names))]
			cons, err := m.Connect(ctx, "billing", name)
			if err != nil {
				fail("connect: %v", err)
			}
			consumers[name] = cons
		case k < 4: // depart
			for name, cons := range consumers {
				if err := m.Disconnect(ctx, cons); err != nil {
					fail("disconnect: %v", err)
				}
				delete(consumers, name)
				break
			}
		case k < 6:
			for name, cons := range consumers {
				ds, _, err := m.Poll(ctx, cons)
				if err != nil {
					fail("poll: %v", err)
				}
				if len(ds) > batch {
					fail("a poll of %d deliveries, the batch is %d", len(ds), batch)
				}
				received(name, ds)
			}
		case k < 8: // settle some tokens of a consumer, maybe stale ones
			for name, tokens := range outstanding {
				if len(tokens) == 0 {
					continue
				}
				r.Shuffle(len(tokens), func(i, j int) { tokens[i], tokens[j] = tokens[j], tokens[i] })
				n := 1 + r.IntN(len(tokens))
				pick := tokens[:n] // out of order
				outstanding[name] = tokens[n:]
				action := []Action{Acknowledge, Acknowledge, Park, Retry}[r.IntN(4)]
				out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: pick, Action: action})
				if err != nil {
					fail("settle: %v", err)
				}
				staleSet := map[Token]bool{}
				for _, st := range out.Stale {
					staleSet[st] = true
				}
				if action != Retry {
					for _, tok := range pick {
						if !staleSet[tok] {
							settled[tok.EventID] = true
						}
					}
				}
				break
			}
		case k < 9:
			switch r.IntN(10) {
			case 0: // replay every parked event: each may come once more
				parked, err := m.Parked("billing")
				if err != nil {
					fail("%v", err)
				}
				if _, err := m.Replay(ctx, "billing", nil); err != nil {
					fail("replay: %v", err)
				}
				for _, pk := range parked {
					delete(settled, pk.EventID)
					replaying[pk.EventID] = true
				}
			case 1: // reset to the beginning: everything may come again, in order
				if _, err := m.Reset(ctx, "billing", Start{}); err != nil {
					fail("reset: %v", err)
				}
				settled, firstSeen, lastFirst, replaying = map[uint64]bool{}, map[uint64]bool{}, map[int]uint64{}, map[uint64]bool{}
			default:
				c.now = c.now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			}
		default: // restart
			m.Stop(ctx)
			storetest.Close(t, s)
			s = storetest.Start(t, open)
			m = started(t, s, c)
			m.batch = batch
			consumers, outstanding = map[string]*Consumer{}, map[string][]Token{}
		}
		checkSpread()
		if r.IntN(3) == 0 { // now and then: the count goes on between calls
			if got, want := lagOf(t, m, "billing"), lagByScan(t, m, "billing"); got != want {
				fail("lag %d, counted from the whole log %d", got, want)
			}
		}
	}
	// Drain with one consumer.
	for name, cons := range consumers {
		if err := m.Disconnect(ctx, cons); err != nil {
			fail("disconnect: %v", err)
		}
		delete(consumers, name)
	}
	w, err := m.Connect(ctx, "billing", "drain")
	if err != nil {
		fail("%v", err)
	}
	for round := 0; ; round++ {
		if round > 5000 {
			fail("not drained")
		}
		c.now = c.now.Add(2 * time.Second)
		ds, _, err := m.Poll(ctx, w)
		if err != nil {
			fail("%v", err)
		}
		received("drain", ds)
		if len(ds) == 0 {
			info, _ := m.Get("billing")
			if info.InFlight == 0 {
				break
			}
			continue
		}
		tokens := make([]Token, len(ds))
		for i, dv := range ds {
			tokens[i] = dv.Token
		}
		out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: tokens})
		if err != nil {
			fail("%v", err)
		}
		staleSet := map[Token]bool{}
		for _, st := range out.Stale {
			staleSet[st] = true
		}
		for _, tok := range tokens {
			if !staleSet[tok] {
				settled[tok.EventID] = true
			}
		}
	}
	parked, err := m.Parked("billing")
	if err != nil {
		fail("%v", err)
	}
	for _, pk := range parked {
		settled[pk.EventID] = true
	}
	for id := range matching {
		if !settled[id] {
			fail("event %d never settled", id)
		}
	}
}

func lagOf(t *testing.T, m *Manager, name string) uint64 {
	t.Helper()
	lag, err := m.Lag(name)
	if err != nil {
		t.Fatal(err)
	}
	return lag
}

// lagByScan counts the lag of subscription name as api.md defines it,
// reading the whole log: the matching events at or above their partition's
// floor that are neither settled nor in flight.
func lagByScan(t *testing.T, m *Manager, name string) uint64 {
	t.Helper()
	sub, err := m.lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	view := m.store.View()
	if view.Count() == 0 {
		return 0
	}
	var lag uint64
	it := view.Scan(store.Scan{From: 0, To: view.Count() - 1})
	for it.Next() {
		f, err := event.Decode(it.Record())
		if err != nil {
			t.Fatal(err)
		}
		if !sub.def.Matches(f.Subject, f.Type) {
			continue
		}
		p, id := sub.parts[PartitionOf(f.Subject, len(sub.parts))], it.Record().ID
		if _, inFlight := searchDeliveries(p.inFlight, id); id >= p.floor && !p.Settled(id) && !inFlight {
			lag++
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return lag
}
