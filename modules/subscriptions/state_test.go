package subscriptions

import (
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// all is a limit of Due that takes every delivery due.
const all = math.MaxInt

func opts(maxInFlight, maxDeliveries int) Options {
	o := Defaults()
	o.MaxInFlight, o.MaxDeliveries = maxInFlight, maxDeliveries
	return o
}

func tokenOf(p *Partition, d Delivery) Token {
	return Token{Subscription: "s", Partition: p.Index, Epoch: p.Epoch, EventID: d.EventID, Attempt: d.Attempt}
}

func deliver(t *testing.T, p *Partition, id uint64) Delivery {
	t.Helper()
	d, ok, err := p.Deliver(id, t0, true)
	if err != nil || !ok {
		t.Fatalf("deliver %d: %v %v", id, ok, err)
	}
	return d
}

func TestSettlesOutOfOrderMoveThePositionOverThePrefix(t *testing.T) {
	p := NewPartition(0, opts(3, 10), 0)
	p.Move("w1")
	if _, ok := p.Position(); ok {
		t.Fatal("a position before any settle")
	}
	d2, d5, d7 := deliver(t, p, 2), deliver(t, p, 5), deliver(t, p, 7)
	if p.Room() != 0 {
		t.Fatalf("room %d with a full window", p.Room())
	}
	if _, _, err := p.Deliver(9, t0, true); err != errNoRoom {
		t.Fatalf("a fourth delivery: %v", err)
	}
	if !p.Acknowledge(tokenOf(p, d5)) || !p.Acknowledge(tokenOf(p, d7)) {
		t.Fatal("acknowledgements were stale")
	}
	if f := p.Floor(); f != 2 {
		t.Fatalf("floor %d while event 2 is in flight", f)
	}
	if p.Acknowledge(tokenOf(p, d5)) {
		t.Fatal("a second acknowledgement was not stale")
	}
	if !p.Acknowledge(tokenOf(p, d2)) {
		t.Fatal("stale")
	}
	if pos, ok := p.Position(); !ok || pos != 7 {
		t.Fatalf("position %d %v, want 7", pos, ok)
	}
	p.Skip(20) // nothing of the partition up to 19
	if pos, _ := p.Position(); pos != 19 || p.Cursor() != 20 {
		t.Fatalf("position %d, cursor %d after a skip", pos, p.Cursor())
	}
}

func TestTimeoutsRedeliverThenPark(t *testing.T) {
	p := NewPartition(1, opts(10, 3), 0)
	p.Move("w1")
	d := deliver(t, p, 4)
	first := tokenOf(p, d)
	now := t0
	for attempt := 2; attempt <= 3; attempt++ {
		now = now.Add(p.opts.AcknowledgeTimeout)
		again, parked := p.Due(now, all)
		if len(again) != 1 || again[0].Attempt != attempt || len(parked) != 0 {
			t.Fatalf("at attempt %d: again %v, parked %v", attempt, again, parked)
		}
	}
	if again, parked := p.Due(now.Add(time.Second), all); len(again)+len(parked) != 0 {
		t.Fatal("sent before its timeout")
	}
	again, parked := p.Due(now.Add(p.opts.AcknowledgeTimeout), all)
	if len(again) != 0 || len(parked) != 1 || parked[0].EventID != 4 || parked[0].Attempts != 3 {
		t.Fatalf("after the last attempt: again %v, parked %v", again, parked)
	}
	if pos, _ := p.Position(); pos != 4 || p.Acknowledge(first) {
		t.Fatalf("position %d after parking, or the first token still settles", pos)
	}
}

func TestRetryAndParkByTheConsumer(t *testing.T) {
	p := NewPartition(0, opts(10, 5), 0)
	p.Move("w1")
	a, b := deliver(t, p, 1), deliver(t, p, 2)
	if !p.Retry(tokenOf(p, a), 5*time.Second, t0) {
		t.Fatal("stale")
	}
	if again, _ := p.Due(t0.Add(4*time.Second), all); len(again) != 0 {
		t.Fatal("retried before the delay")
	}
	again, _ := p.Due(t0.Add(5*time.Second), all)
	if len(again) != 1 || again[0].EventID != 1 || again[0].Attempt != 2 {
		t.Fatalf("retry: %v", again)
	}
	parked, ok := p.Park(tokenOf(p, b), "bad data", t0)
	if !ok || parked.Reason != "bad data" || parked.Attempts != 1 || !p.Settled(2) {
		t.Fatalf("park: %+v %v", parked, ok)
	}
	if f := p.Floor(); f != 1 {
		t.Fatalf("floor %d with event 1 in flight", f)
	}
}

func TestMoveFencesTheOldOwnerAndSendsAgainInOrder(t *testing.T) {
	p := NewPartition(0, opts(10, 10), 0)
	p.Move("w1")
	old := []Token{tokenOf(p, deliver(t, p, 3)), tokenOf(p, deliver(t, p, 1+3*2))}
	p.Move("w2")
	for _, tok := range old {
		if p.Acknowledge(tok) {
			t.Fatal("a token of the old owner settled")
		}
	}
	again, _ := p.Due(t0.Add(time.Second), all)
	if len(again) != 2 || again[0].EventID != 3 || again[1].EventID != 7 || again[0].Attempt != 1 {
		t.Fatalf("sent again to the new owner, with the same attempt: %v", again)
	}
	// The acknowledge timeout kept running: at its end the attempt rises.
	late, _ := p.Due(t0.Add(p.opts.AcknowledgeTimeout), all)
	if len(late) != 2 || late[0].Attempt != 2 {
		t.Fatalf("after the timeout: %v", late)
	}
	// Its token of attempt 1 is stale now; that of attempt 2 settles.
	if p.Acknowledge(tokenOf(p, again[1])) {
		t.Fatal("the token of an attempt sent again settled")
	}
	if !p.Acknowledge(tokenOf(p, late[1])) || p.Floor() != 3 {
		t.Fatalf("the new owner's token: floor %d", p.Floor())
	}
}

func TestResetForgetsWhatIsInFlight(t *testing.T) {
	p := NewPartition(0, opts(10, 10), 0)
	p.Move("w1")
	tok := tokenOf(p, deliver(t, p, 8))
	p.Reset(2, t0)
	if p.Acknowledge(tok) || len(p.InFlight()) != 0 || p.Floor() != 2 || p.Cursor() != 2 {
		t.Fatalf("after a reset: floor %d, cursor %d, in flight %v", p.Floor(), p.Cursor(), p.InFlight())
	}
	if d := deliver(t, p, 8); d.Attempt != 1 {
		t.Fatalf("the event after a reset: attempt %d", d.Attempt)
	}
}

func TestSnapshotRestore(t *testing.T) {
	p := NewPartition(2, opts(10, 10), 5)
	p.Move("w1")
	a := deliver(t, p, 5)
	deliver(t, p, 6)
	b := deliver(t, p, 9)
	p.Acknowledge(tokenOf(p, b))
	p.Due(t0.Add(time.Hour), all) // every one sent again: attempt 2
	raw, err := MarshalSnapshot(p.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	s, err := UnmarshalSnapshot(raw)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Restore(2, p.opts, s, t0)
	if err != nil {
		t.Fatal(err)
	}
	if q.Floor() != 5 || q.Cursor() != 10 || !q.Settled(9) || q.Settled(6) || q.Owner != "" || q.Epoch != p.Epoch {
		t.Fatalf("restored: floor %d cursor %d epoch %d", q.Floor(), q.Cursor(), q.Epoch)
	}
	q.Move("w1")
	again, _ := q.Due(t0, all)
	if ids := []uint64{again[0].EventID, again[1].EventID}; !slices.Equal(ids, []uint64{5, 6}) || again[0].Attempt != 2 {
		t.Fatalf("sent again after the restart: %v", again)
	}
	if q.Acknowledge(tokenOf(p, a)) {
		t.Fatal("a token from before the restart settled")
	}
	for _, bad := range []Snapshot{
		{Floor: 5, Settled: []uint64{4}},
		{Floor: 0, Settled: []uint64{3, 3}},
		{Floor: 0, InFlight: []SnapshotAttempt{{EventID: 2, Attempt: 0}}},
		{Floor: 0, Settled: []uint64{2}, InFlight: []SnapshotAttempt{{EventID: 2, Attempt: 1}}},
	} {
		if _, err := Restore(0, p.opts, bad, t0); err == nil {
			t.Errorf("restore of %+v", bad)
		}
	}
}

func TestReplayOfAParkedEvent(t *testing.T) {
	p := NewPartition(0, opts(2, 2), 0)
	p.Move("w1")
	d := deliver(t, p, 3)
	if _, ok := p.Park(tokenOf(p, d), "", t0); !ok {
		t.Fatal("stale")
	}
	next := deliver(t, p, 5)
	if !p.Replay(3, t0) || p.Replay(3, t0) || p.Replay(5, t0) {
		t.Fatal("a replay of a replayed or in-flight event was taken, or the parked one was not")
	}
	if p.Room() != 0 {
		t.Fatalf("room %d: the replay takes a place in the window", p.Room())
	}
	again, _ := p.Due(t0, all)
	if len(again) != 1 || again[0].EventID != 3 || again[0].Attempt != 1 {
		t.Fatalf("the replay: %v", again)
	}
	floor := p.Floor()
	if !p.Acknowledge(tokenOf(p, again[0])) || p.Floor() != floor || len(p.Replays()) != 0 {
		t.Fatalf("acknowledging the replay: floor %d -> %d, replays %v", floor, p.Floor(), p.Replays())
	}
	if !p.Acknowledge(tokenOf(p, next)) || p.Floor() != 6 {
		t.Fatalf("floor %d", p.Floor())
	}
	// Out of attempts again: parked again.
	p.Replay(3, t0)
	p.Due(t0, all)
	p.Due(t0.Add(time.Minute), all)
	if _, parked := p.Due(t0.Add(2*time.Minute), all); len(parked) != 1 || parked[0].EventID != 3 || len(p.Replays()) != 0 {
		t.Fatalf("a replay out of attempts: %v, replays %v", parked, p.Replays())
	}
}

func TestResetParksReplaysAgain(t *testing.T) {
	p := NewPartition(0, opts(5, 5), 0)
	p.Move("w1")
	d := deliver(t, p, 1)
	p.Park(tokenOf(p, d), "", t0)
	if !p.Replay(1, t0) {
		t.Fatal("the parked event was not replayed")
	}
	parked := p.Reset(0, t0)
	if len(parked) != 1 || parked[0].EventID != 1 || len(p.Replays()) != 0 {
		t.Fatalf("a reset with a replay: %v, replays %v", parked, p.Replays())
	}
	if p.Replay(1, t0) {
		t.Fatal("replayed an event the rebuild delivers anyway")
	}
}
