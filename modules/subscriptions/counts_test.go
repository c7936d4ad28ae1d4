package subscriptions

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestLagCountedInChunksWhileConsumersWork counts the lag of a backlog of
// several chunks (catchUpLag lets go of the lock between them) while a
// consumer takes and acknowledges deliveries in between: at every moment
// the consumer stands still, the lag is the matching events neither
// settled nor in flight, as a count from scratch by a manager started
// afresh says too.
func TestLagCountedInChunksWhileConsumersWork(t *testing.T) {
	const matching = 3*lagChunk + 1234
	s, m := backlog(t, matching)
	c, err := m.Connect(ctx, "billing", "w1")
	if err != nil {
		t.Fatal(err)
	}
	settled, inFlight := 0, 0
	var mu sync.Mutex // over settled and inFlight
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the consumer: takes a batch, acknowledges half of what it holds
		defer close(done)
		var held []Delivered
		for {
			select {
			case <-stop:
				return
			default:
			}
			ds, _, err := m.Poll(ctx, c)
			if err != nil {
				t.Error(err)
				return
			}
			held = append(held, ds...)
			n := len(held) / 2
			var tokens []Token
			for _, d := range held[:n] {
				tokens = append(tokens, d.Token)
			}
			if n > 0 {
				if out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: tokens}); err != nil || out.Done != n {
					t.Errorf("settle: %+v %v", out, err)
					return
				}
			}
			held = held[n:]
			mu.Lock()
			settled, inFlight = settled+n, len(held)
			mu.Unlock()
		}
	}()
	progress := func() int {
		mu.Lock()
		defer mu.Unlock()
		return settled
	}
	eventually(t, 10*time.Second, "the consumer at work", func() bool { return progress() > 0 })
	for range 5 { // counts that overlap the consumer's work
		if _, err := m.Lag("billing"); err != nil {
			t.Fatal(err)
		}
	}
	before := progress()
	eventually(t, 10*time.Second, "the consumer still at work", func() bool { return progress() > before })
	close(stop)
	<-done
	info, err := m.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	want := uint64(matching - settled - inFlight)
	if info.Lag != want || info.InFlight != inFlight {
		t.Fatalf("lag %d, in flight %d; want %d and %d (%d settled of %d)", info.Lag, info.InFlight, want, inFlight, settled, matching)
	}
	fresh := started(t, s, &clock{now: t0})
	if lag, err := fresh.Lag("billing"); err != nil || lag != want { // what was in flight is so again
		t.Fatalf("a fresh count: %d %v, want %d", lag, err, want)
	}
}

// backlog writes matching events of 97 subjects below /orders, each
// followed by one of /other, in batches of 2,000, and creates billing on
// them (4 partitions, windows of 500) on a manager it starts.
func backlog(t *testing.T, matching int) (*store.Store, *Manager) {
	t.Helper()
	s := storetest.Start(t, storetest.Pebble.New(t))
	for written := 0; written < matching; {
		var batch []event.Candidate
		for ; len(batch) < 2000 && written < matching; written++ {
			batch = append(batch, storetest.Candidate(fmt.Sprintf("/orders/%d", written%97), "io.example.placed", `{}`),
				storetest.Candidate("/other", "io.example.placed", `{}`))
		}
		if _, err := s.Write(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	m := started(t, s, &clock{now: t0})
	if _, err := m.Create(ctx, definition(4, 500)); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// TestLagPassTakesOffWhatCursorsPassMeanwhile runs a count of a long
// backlog outside the lock by hand, step by step: a consumer takes and
// acknowledges deliveries from the pass's range between its start and its
// end, and the lag the pass leaves is what a count from scratch says. A
// reset meanwhile has the pass dropped, and the count after it is right
// too.
func TestLagPassTakesOffWhatCursorsPassMeanwhile(t *testing.T) {
	const matching = 2*lagChunk + 777
	s, m := backlog(t, matching)
	m.counts.Wait() // the count Create started in the background
	sub, err := m.lookup("billing")
	if err != nil {
		t.Fatal(err)
	}
	begin := func() (*lagPass, *store.View) {
		sub.mu.Lock()
		defer sub.unlock()
		sub.lag = lagCount{}
		if _, err := m.countLag(sub, 0); err != nil {
			t.Fatal(err)
		}
		view := m.store.View()
		return sub.lag.begin(view.Count()), view
	}
	end := func(pass *lagPass, view *store.View) (added bool) {
		counts, err := sub.countPass(view, pass, nil)
		if err != nil {
			t.Fatal(err)
		}
		sub.mu.Lock()
		defer sub.unlock()
		return sub.lag.end(pass, counts, sub.cursors(), true)
	}
	c, err := m.Connect(ctx, "billing", "w1")
	if err != nil {
		t.Fatal(err)
	}
	pass, view := begin()
	held := poll(t, m, c)
	held = append(held, poll(t, m, c)...)
	var tokens []Token
	for _, d := range held[:len(held)/2] {
		tokens = append(tokens, d.Token)
	}
	if out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: tokens}); err != nil || out.Done != len(tokens) {
		t.Fatalf("settle: %+v %v", out, err)
	}
	if !end(pass, view) {
		t.Fatal("the pass was dropped")
	}
	want := uint64(matching - len(held))
	if lag, err := m.Lag("billing"); err != nil || lag != want {
		t.Fatalf("lag after the pass: %d %v, want %d", lag, err, want)
	}
	if lag, err := started(t, s, &clock{now: t0}).Lag("billing"); err != nil || lag != want {
		t.Fatalf("a fresh count: %d %v, want %d", lag, err, want)
	}

	pass, view = begin()
	if _, err := m.Reset(ctx, "billing", Start{Kind: FromBeginning}); err != nil {
		t.Fatal(err)
	}
	if end(pass, view) {
		t.Fatal("the pass counted across a reset")
	}
	if lag, err := m.Lag("billing"); err != nil || lag != matching {
		t.Fatalf("lag after a reset: %d %v, want %d", lag, err, matching)
	}
}

// TestDeleteAndReplayInBatches parks more events than one commit of a
// replay or of a delete's sweep takes: a replay of all takes every one, a
// commit at a time, and a delete leaves nothing behind, also of a name
// whose records a cut-off delete left (swept when it is created again).
func TestDeleteAndReplayInBatches(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	m := started(t, s, &clock{now: t0})
	const parked = replayBatch + 2345
	d := definition(2, 100)
	d.Options.Start = Start{Kind: AfterEvent, EventID: parked} // every parked id lies below the floor: settled
	if _, err := m.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var changes []store.Change
	for id := range uint64(parked) { // parked as a drain that gave up on them would have
		changes = append(changes, parkChange("billing", int(id%2), Parked{EventID: id, Attempts: 3, At: t0}))
	}
	if _, err := s.Commit(ctx, store.Request{Changes: changes}); err != nil {
		t.Fatal(err)
	}
	m = started(t, s, &clock{now: t0}) // a start counts them
	if info, err := m.Get("billing"); err != nil || info.Parked != parked {
		t.Fatalf("parked after a start: %+v %v", info.Parked, err)
	}
	if n, err := m.Replay(ctx, "billing", nil); err != nil || n != parked {
		t.Fatalf("replay of all: %d %v, want %d", n, err, parked)
	}
	if info, err := m.Get("billing"); err != nil || info.Parked != 0 || info.InFlight != parked {
		t.Fatalf("after the replay: parked %d, in flight %d, %v", info.Parked, info.InFlight, err)
	}
	if err := m.Delete(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	if n := storedRecords(t, s, "billing"); n != 0 {
		t.Fatalf("%d records left after the delete", n)
	}
	// A delete cut off after its first commit: records left, swept when
	// the name is created again.
	if _, err := s.Commit(ctx, store.Request{Changes: changes[:100]}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, definition(2, 100)); err != nil {
		t.Fatal(err)
	}
	if info, err := m.Get("billing"); err != nil || info.Parked != 0 {
		t.Fatalf("the name created again: %+v %v", info, err)
	}
}

// TestParkedCountKept: the parked count a node keeps follows parks,
// a park of an event parked before (delivered again after a reset) and
// replays, as a count of the records says.
func TestParkedCountKept(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	orders(t, s, 1) // /orders at id 0
	c := &clock{now: t0}
	m := started(t, s, c)
	if _, err := m.Create(ctx, definition(1, 1)); err != nil {
		t.Fatal(err)
	}
	w, _ := m.Connect(ctx, "billing", "w1")
	parkAll := func() {
		t.Helper()
		for range 4 { // three attempts, then parked
			poll(t, m, w)
			c.now = c.now.Add(time.Second)
		}
	}
	check := func(what string, want int) {
		t.Helper()
		info, err := m.Get("billing")
		counted, cerr := m.countParked("billing")
		if err != nil || cerr != nil || info.Parked != want || counted != want {
			t.Fatalf("%s: parked %d, records %d, want %d (%v %v)", what, info.Parked, counted, want, err, cerr)
		}
	}
	parkAll()
	check("parked", 1)
	if _, err := m.Reset(ctx, "billing", Start{Kind: FromBeginning}); err != nil {
		t.Fatal(err)
	}
	parkAll() // delivered again after the reset, parked again: one record
	check("parked again after a reset", 1)
	if n, err := m.Replay(ctx, "billing", nil); err != nil || n != 1 {
		t.Fatalf("replay: %d %v", n, err)
	}
	check("replayed", 0)
}

// TestReadsNeverWaitForTheLock: read-subscription and the metrics take a
// subscription's figures from its view, so that they answer while a
// commit holds its lock (here the test holds it), with the lag of the
// events written since the view was published counted too.
func TestReadsNeverWaitForTheLock(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	orders(t, s, 20) // 20 of /orders, at even ids
	m := started(t, s, &clock{now: t0})
	if _, err := m.Create(ctx, definition(2, 5)); err != nil {
		t.Fatal(err)
	}
	w, err := m.Connect(ctx, "billing", "w1")
	if err != nil {
		t.Fatal(err)
	}
	delivered := poll(t, m, w) // 5 in flight in each partition that has events
	if _, err := m.Get("billing"); err != nil {
		t.Fatal(err)
	}
	orders(t, s, 10) // 10 more, after the view's count
	sub, err := m.lookup("billing")
	if err != nil {
		t.Fatal(err)
	}
	sub.mu.Lock() // a commit under way
	answered := make(chan Info, 1)
	go func() {
		defer close(answered)
		info, err := m.Get("billing")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := m.Counts(); err != nil {
			t.Error(err)
		}
		if _, err := m.Lag("billing"); err != nil {
			t.Error(err)
		}
		answered <- info
	}()
	select {
	case info := <-answered:
		if info.InFlight != len(delivered) || info.Lag != uint64(30-len(delivered)) || len(info.Consumers) != 1 {
			t.Errorf("read under the lock: in flight %d, lag %d, consumers %v; want %d, %d, 1",
				info.InFlight, info.Lag, info.Consumers, len(delivered), 30-len(delivered))
		}
	case <-time.After(10 * time.Second):
		t.Error("the reads waited for the subscription's lock")
	}
	sub.mu.Unlock()
	<-answered
}
