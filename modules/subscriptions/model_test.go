package subscriptions

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestModel drives a partition with random interleavings of new events,
// deliveries, acknowledgements (current and stale), retries, parks,
// timeouts, moves and restarts (through the stored snapshot), and checks
// it against a reference: no event is delivered again once a settle of it
// succeeded, first deliveries come in id order, the floor never falls and
// never passes an unsettled event; then it drains the partition and checks
// that every event got settled.
func TestModel(t *testing.T) {
	for seed := range uint64(200) {
		runModel(t, seed)
	}
}

func runModel(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	o := opts(1+r.IntN(8), 1+r.IntN(4))
	o.AcknowledgeTimeout = time.Second
	now := t0
	p := NewPartition(0, o, 0)
	p.Move("w0")
	var (
		log       []uint64 // ids of the partition's events, ascending
		nextID    uint64
		settled   = map[uint64]bool{} // a settle of it succeeded
		delivered = map[uint64]bool{}
		lastFirst = int64(-1)
		tokens    []Token // every token handed out
		floor     uint64
	)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	sent := func(d Delivery) {
		if settled[d.EventID] {
			fail("event %d delivered again after it was settled", d.EventID)
		}
		if !delivered[d.EventID] {
			if int64(d.EventID) <= lastFirst {
				fail("first delivery of %d after that of %d", d.EventID, lastFirst)
			}
			lastFirst, delivered[d.EventID] = int64(d.EventID), true
		}
		tokens = append(tokens, tokenOf(p, d))
	}
	offer := func() {
		for p.Room() > 0 {
			i, _ := slices.BinarySearch(log, p.Cursor())
			if i == len(log) {
				p.Skip(nextID)
				return
			}
			d, ok, err := p.Deliver(log[i], now, true)
			if err != nil {
				fail("deliver %d: %v", log[i], err)
			}
			if ok {
				sent(d)
			}
		}
	}
	due := func() {
		again, parked := p.Due(now, 1+r.IntN(4)) // a poll's budget: the rest stays due
		if len(again) > 4 {
			fail("%d deliveries due beyond the limit", len(again))
		}
		for _, d := range again {
			sent(d)
		}
		for _, pk := range parked {
			settled[pk.EventID] = true
		}
	}
	check := func() {
		if p.Floor() < floor {
			fail("floor fell from %d to %d", floor, p.Floor())
		}
		floor = p.Floor()
		for _, id := range log {
			if id < floor && !settled[id] {
				fail("floor %d passed unsettled event %d", floor, id)
			}
		}
	}
	for step := 0; step < 400; step++ {
		switch k := r.IntN(10); {
		case k < 2: // new events, some of other partitions (gaps)
			for range 1 + r.IntN(5) {
				nextID += 1 + uint64(r.IntN(3))
				log = append(log, nextID-1)
			}
		case k < 4:
			offer()
		case k < 6: // settle a random token: current or stale
			if len(tokens) == 0 {
				continue
			}
			tok := tokens[r.IntN(len(tokens))]
			list, _ := p.find(tok)
			inFlight := list != nil
			var ok bool
			switch r.IntN(4) {
			case 0:
				_, ok = p.Park(tok, "", now)
			case 1:
				ok = p.Retry(tok, time.Duration(r.IntN(3))*time.Second, now)
			default:
				ok = p.Acknowledge(tok)
			}
			if ok != inFlight || ok && tok.Epoch != p.Epoch {
				fail("settle of %+v: %v, in flight %v", tok, ok, inFlight)
			}
			if ok && p.Settled(tok.EventID) {
				settled[tok.EventID] = true
			}
		case k < 7:
			now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			due()
		case k < 8:
			p.Move([]string{"w0", "w1", "w2"}[r.IntN(3)])
			due()
		case k < 9: // restart
			raw, err := MarshalSnapshot(p.Snapshot())
			if err != nil {
				fail("%v", err)
			}
			s, err := UnmarshalSnapshot(raw)
			if err != nil {
				fail("%v", err)
			}
			if p, err = Restore(0, o, s, now); err != nil {
				fail("restore: %v", err)
			}
			p.Move("w0")
			due()
		default:
			due()
		}
		check()
	}
	// Drain: deliver and acknowledge everything.
	for round := 0; p.Floor() < nextID; round++ {
		if round > 10_000 {
			fail("not drained: floor %d of %d", p.Floor(), nextID)
		}
		offer()
		due()
		for _, d := range slices.Clone(p.InFlight()) {
			if p.Acknowledge(tokenOf(p, d)) {
				settled[d.EventID] = true
			}
		}
		check()
	}
	for _, id := range log {
		if !settled[id] {
			fail("event %d never settled", id)
		}
	}
}
