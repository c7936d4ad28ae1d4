package subscriptions

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// sharedNode starts a store on the database at url and a manager on it as
// the node name, keeping its leases until the test ends.
func sharedNode(t *testing.T, url, name string, lease time.Duration) (*store.Store, *Manager) {
	t.Helper()
	s := store.New(func() (store.Backend, error) {
		return pgstore.Open(ctx, url, zap.NewNop(), pgstore.Options{MaxConnections: 8})
	}, zap.NewNop(), nil, store.Memory{})
	m := NewManager(s, 10)
	m.Share(name, lease)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(func() { m.Stop(ctx) })
	return s, m
}

// eventually fails the test unless cond holds within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// spread returns the partitions of each consumer as node m sees them.
func spread(t *testing.T, m *Manager) map[string]int {
	t.Helper()
	info, err := m.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, c := range info.Consumers {
		out[c.Name] = len(c.Partitions)
	}
	return out
}

// TestSharedNodes has consumers of one subscription on two nodes: the
// partitions spread over both, every event is delivered once to the
// owner of its partition, settles made on the other node count, and when
// a consumer leaves its partitions move to the other node.
func TestSharedNodes(t *testing.T) {
	url := pg.Database(t)
	sa, a := sharedNode(t, url, "node-a", 3*time.Second)
	_, b := sharedNode(t, url, "node-b", 3*time.Second)
	if _, err := a.Create(ctx, definition(4, 100)); err != nil {
		t.Fatal(err)
	}
	ca := connect(t, a, "billing", "wa")
	cb, err := b.Connect(ctx, "billing", "wb") // b learns of the subscription from the store
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "two partitions each", func() bool {
		s := spread(t, a)
		return s["wa"] == 2 && s["wb"] == 2
	})
	orders(t, sa, 20) // 20 events of /orders/*
	seen := map[uint64]string{}
	var tokens []Token
	eventually(t, 10*time.Second, "every event delivered", func() bool {
		for _, x := range []struct {
			m *Manager
			c *Consumer
		}{{a, ca}, {b, cb}} {
			for _, d := range poll(t, x.m, x.c) {
				if prev, ok := seen[d.Record.ID]; ok {
					t.Fatalf("event %d delivered to %s and to %s", d.Record.ID, prev, x.c.Name)
				}
				seen[d.Record.ID] = x.c.Name
				tokens = append(tokens, d.Token)
			}
		}
		return len(seen) == 20
	})
	// Every settle on the node that does not deliver the partition.
	for _, tok := range tokens {
		settleOn := a
		if seen[tok.EventID] == "wa" {
			settleOn = b
		}
		out, err := settleOn.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{tok}})
		if err != nil || out.Done != 1 {
			t.Fatalf("settle %v elsewhere: %+v %v", tok, out, err)
		}
	}
	eventually(t, 5*time.Second, "nothing in flight, nothing sent again", func() bool {
		for _, x := range []struct {
			m *Manager
			c *Consumer
		}{{a, ca}, {b, cb}} {
			if ds := poll(t, x.m, x.c); len(ds) > 0 {
				t.Fatalf("%s got %d deliveries after every event was acknowledged", x.c.Name, len(ds))
			}
		}
		info, err := b.Get("billing")
		return err == nil && info.InFlight == 0
	})
	if err := a.Disconnect(ctx, ca); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "every partition with wb", func() bool { return spread(t, b)["wb"] == 4 })
	orders(t, sa, 4)
	eventually(t, 5*time.Second, "the new events on node b", func() bool {
		for _, d := range poll(t, b, cb) {
			seen[d.Record.ID] = "wb"
		}
		return len(seen) == 24
	})
}

// TestSharedTakeover pauses a node's leases: it stops delivering before they
// expire, the consumer on the other node takes its partitions once they
// expired, and the paused node's tokens are stale on either node.
func TestSharedTakeover(t *testing.T) {
	url := pg.Database(t)
	const lease = 2 * time.Second
	sa, a := sharedNode(t, url, "node-a", lease)
	_, b := sharedNode(t, url, "node-b", lease)
	if _, err := a.Create(ctx, definition(1, 100)); err != nil {
		t.Fatal(err)
	}
	ca := connect(t, a, "billing", "wa")
	eventually(t, 5*time.Second, "the partition with wa", func() bool { return spread(t, a)["wa"] == 1 })
	cb := connect(t, b, "billing", "wb")
	orders(t, sa, 3)
	held := collect(t, a, ca, 3, 5*time.Second, "three deliveries to wa")
	if ds := poll(t, b, cb); len(ds) != 0 {
		t.Fatalf("wb got %d deliveries while wa holds the partition", len(ds))
	}
	// Node a stops renewing, as if paused; its consumer stays connected.
	a.shared.stop()
	<-a.shared.done
	paused := time.Now()
	var again []Delivered
	eventually(t, lease+5*time.Second, "wb takes the partition and gets the events again", func() bool {
		got := poll(t, b, cb)
		if len(got) > 0 && len(again) == 0 && a.shared.valid() {
			t.Fatalf("node b delivers %v after the pause while node a's lease is still valid", time.Since(paused))
		}
		again = append(again, got...)
		return len(again) == 3
	})
	if ds := poll(t, a, ca); len(ds) != 0 {
		t.Fatalf("the paused node delivered %d events", len(ds))
	}
	for _, m := range []*Manager{a, b} {
		out, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{held[0].Token}})
		if err != nil || len(out.Stale) != 1 {
			t.Fatalf("a settle of the old epoch: %+v %v", out, err)
		}
	}
	out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{again[0].Token}})
	if err != nil || out.Done != 1 {
		t.Fatalf("a settle of the new epoch: %+v %v", out, err)
	}
	write := storetest.Candidate("/invoices/1", "io.example.invoiced", `{}`)
	for _, m := range []*Manager{a, b} {
		if _, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{held[2].Token},
			Write: store.Request{Events: []event.Candidate{write}}}); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("a write acknowledging an old delivery: %v", err)
		}
	}
	if n := sa.Durable(); n != 6 {
		t.Fatalf("%d events, want the 6 written before: a refused write was stored", n)
	}
}

// TestSharedReapedNodeComesBack pauses the leases of a node whose
// consumer is the only one of its subscription, until a node with a
// consumer of another subscription reaps them: when the node renews again
// it learns that it was reaped, registers afresh and delivers its
// partition again, with a new epoch.
func TestSharedReapedNodeComesBack(t *testing.T) {
	url := pg.Database(t)
	const lease = 2 * time.Second
	sa, a := sharedNode(t, url, "node-a", lease)
	_, b := sharedNode(t, url, "node-b", lease)
	if _, err := a.Create(ctx, definition(1, 100)); err != nil {
		t.Fatal(err)
	}
	other := definition(1, 100)
	other.Name = "other"
	if _, err := b.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	ca := connect(t, a, "billing", "wa")
	connect(t, b, "other", "wb")
	orders(t, sa, 1)
	first := collect(t, a, ca, 1, 5*time.Second, "the delivery to wa")
	a.shared.stop()
	<-a.shared.done
	eventually(t, lease+5*time.Second, "node b reaps node a", func() bool {
		_, found, err := sa.State(spaceNodes, "node-a")
		return err == nil && !found
	})
	a.Start()
	again := collect(t, a, ca, 1, 5*time.Second, "wa gets the event again")
	if again[0].Token.Epoch <= first[0].Token.Epoch || again[0].Record.ID != first[0].Record.ID {
		t.Fatalf("first %+v, again %+v: the same event with a new epoch expected", first[0].Token, again[0].Token)
	}
	out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{first[0].Token, again[0].Token}})
	if err != nil || out.Done != 1 || len(out.Stale) != 1 || out.Stale[0] != first[0].Token {
		t.Fatalf("settles of the old and the new epoch: %+v %v", out, err)
	}
}

// TestSharedChangesElsewhere has node b retry, park, replay and reset what
// node a delivers: a retry is sent again after its delay, a parked event
// is not, a replayed one is, and a reset starts the deliveries over with a
// new epoch.
func TestSharedChangesElsewhere(t *testing.T) {
	sa, a, b, c := ownerAndOther(t)
	orders(t, sa, 3)
	got := collect(t, a, c, 3, 5*time.Second, "three deliveries")
	retried := time.Now()
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{got[0].Token}, Action: Retry, After: time.Second}); err != nil || out.Done != 1 {
		t.Fatalf("retry on node b: %+v %v", out, err)
	}
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{got[1].Token}, Action: Park, Reason: "bad"}); err != nil || out.Done != 1 {
		t.Fatalf("park on node b: %+v %v", out, err)
	}
	var again []Delivered
	eventually(t, 5*time.Second, "the retried event again", func() bool {
		again = append(again, poll(t, a, c)...)
		return len(again) > 0
	})
	if len(again) != 1 || again[0].Record.ID != got[0].Record.ID || again[0].Token.Attempt != 2 || time.Since(retried) < 900*time.Millisecond {
		t.Fatalf("after a retry of event %d after 1s: %+v after %v", got[0].Record.ID, again, time.Since(retried))
	}
	if n, err := b.Replay(ctx, "billing", nil); err != nil || n != 1 {
		t.Fatalf("replay on node b: %d %v", n, err)
	}
	var replayed []Delivered
	eventually(t, 5*time.Second, "the replayed event", func() bool {
		replayed = append(replayed, poll(t, a, c)...)
		return len(replayed) > 0
	})
	if len(replayed) != 1 || replayed[0].Record.ID != got[1].Record.ID || replayed[0].Token.Attempt != 1 {
		t.Fatalf("after the replay of event %d: %+v", got[1].Record.ID, replayed)
	}
	if _, err := b.Reset(ctx, "billing", Start{Kind: FromBeginning}); err != nil {
		t.Fatal(err)
	}
	reset := collect(t, a, c, 3, 5*time.Second, "every event again after the reset")
	for i, dl := range reset {
		if dl.Record.ID != got[i].Record.ID || dl.Token.Epoch <= got[i].Token.Epoch {
			t.Fatalf("after the reset: %+v, before %+v", dl.Token, got[i].Token)
		}
	}
	if out, err := a.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{got[2].Token}}); err != nil || len(out.Stale) != 1 {
		t.Fatalf("a token from before the reset on node a: %+v %v", out, err)
	}
}

// connect connects the consumer name of subscription on m.
func connect(t *testing.T, m *Manager, subscription, name string) *Consumer {
	t.Helper()
	c, err := m.Connect(ctx, subscription, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect polls c on m until it got n deliveries, within d.
func collect(t *testing.T, m *Manager, c *Consumer, n int, d time.Duration, what string) []Delivered {
	t.Helper()
	var out []Delivered
	eventually(t, d, what, func() bool {
		out = append(out, poll(t, m, c)...)
		return len(out) >= n
	})
	if len(out) != n {
		for _, d := range out {
			t.Logf("%s: partition %d epoch %d event %d attempt %d", what, d.Token.Partition, d.Token.Epoch, d.Token.EventID, d.Token.Attempt)
		}
		t.Fatalf("%s: %d deliveries, want %d", what, len(out), n)
	}
	return out
}

// TestSharedAdminOnAnyNode creates a subscription on one node and reads,
// resets and deletes it on others that never saw it before; a second
// delete is ErrNotFound.
func TestSharedAdminOnAnyNode(t *testing.T) {
	url := pg.Database(t)
	_, a := sharedNode(t, url, "node-a", 3*time.Second)
	_, b := sharedNode(t, url, "node-b", 3*time.Second)
	_, c := sharedNode(t, url, "node-c", 3*time.Second)
	if _, err := a.Create(ctx, definition(2, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reset(ctx, "billing", Start{Kind: FromBeginning}); err != nil {
		t.Fatalf("reset on a node that never saw the subscription: %v", err)
	}
	if err := c.Delete(ctx, "billing"); err != nil {
		t.Fatalf("delete on a node that never saw the subscription: %v", err)
	}
	for _, m := range []*Manager{a, b, c} {
		if err := m.Delete(ctx, "billing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a second delete: %v", err)
		}
		if _, err := m.Get("billing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("read after the delete: %v", err)
		}
	}
}

// TestSharedCreatedAgainElsewhere deletes a subscription and creates it
// again on node a while node b knows the old one, and is not told: each
// operation by the name on node b finds the new one, none answers
// ErrNotFound (a consume right after the creation on another node did).
func TestSharedCreatedAgainElsewhere(t *testing.T) {
	url := pg.Database(t)
	_, a := sharedNode(t, url, "node-a", 3*time.Second)
	_, b := sharedNode(t, url, "node-b", 3*time.Second)
	ops := map[string]func() error{
		"connect": func() error { _, err := b.Connect(ctx, "billing", "wb"); return err },
		"get":     func() error { _, err := b.Get("billing"); return err },
		"lag":     func() error { _, err := b.Lag("billing"); return err },
		"reset":   func() error { _, err := b.Reset(ctx, "billing", Start{Kind: FromBeginning}); return err },
		"replay":  func() error { _, err := b.Replay(ctx, "billing", nil); return err },
	}
	for name, op := range ops {
		if _, err := a.Create(ctx, definition(2, 10)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get("billing"); err != nil { // b knows this incarnation
			t.Fatal(err)
		}
		if err := a.Delete(ctx, "billing"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Create(ctx, definition(2, 10)); err != nil {
			t.Fatal(err)
		}
		if err := op(); err != nil {
			t.Errorf("%s on node b after the subscription was created again on node a: %v", name, err)
		}
		if err := a.Delete(ctx, "billing"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSharedReadOutsideTheLock has node b read node a's partition for a
// read of the subscription (readForInfo, outside the lock) and take it in
// (takeRead) in three orders: with nothing in between it takes the read
// made outside, reading nothing under the lock; after a read that began
// later, it keeps that one; and after a settled more and node b took in
// only the later record (as following the inboxes does), it reads the
// partition again under the lock, as the record demands.
func TestSharedReadOutsideTheLock(t *testing.T) {
	sa, a, b, c := ownerAndOther(t)
	orders(t, sa, 2)
	first := collect(t, a, c, 2, 5*time.Second, "two deliveries")
	sub, err := b.lookup("billing")
	if err != nil {
		t.Fatal(err)
	}
	read := func() []partitionRead {
		t.Helper()
		reads, err := b.readForInfo(sub)
		if err != nil {
			t.Fatal(err)
		}
		if reads[0].snap == nil {
			t.Fatalf("node a's partition was not read whole: %+v", reads[0])
		}
		return reads
	}
	take := func(reads []partitionRead, before func()) (inFlight int, copied uint64) {
		t.Helper()
		sub.mu.Lock()
		defer sub.mu.Unlock()
		if before != nil {
			before()
		}
		if err := b.takeRead(sub, reads); err != nil {
			t.Fatal(err)
		}
		return len(sub.parts[0].InFlight()), sub.copied[0]
	}

	reads := read()
	if n, copied := take(reads, nil); n != 2 || copied != reads[0].read {
		t.Fatalf("nothing in between: %d in flight from read %d, want 2 from read %d (the one outside the lock)", n, copied, reads[0].read)
	}

	reads = read()
	orders(t, sa, 1)
	collect(t, a, c, 1, 5*time.Second, "a third delivery")
	var later uint64
	n, copied := take(reads, func() {
		if err := b.refresh(sub, 0, true); err != nil {
			t.Fatal(err)
		}
		later = sub.copied[0]
	})
	if n != 3 || copied != later {
		t.Fatalf("after a later read: %d in flight from read %d, want 3 from read %d", n, copied, later)
	}

	reads = read()
	if out, err := a.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{first[0].Token}}); err != nil || out.Done != 1 {
		t.Fatalf("acknowledge on a: %+v %v", out, err)
	}
	n, copied = take(reads, func() {
		if err := b.refreshAll(sub); err != nil { // the record alone
			t.Fatal(err)
		}
	})
	if n != 2 || copied <= reads[0].read {
		t.Fatalf("after the record moved on: %d in flight from read %d, want 2 from a read after %d", n, copied, reads[0].read)
	}
}

// TestSharedOwnerDecidesOnWhatIsStored parks on node b what node a
// delivers, then replays it on node a, and acknowledges on node a the
// delivery of an event node b replayed: the owner decides on the stored
// state, not on what it last knew, also where it commits nothing. Each
// node's metrics count the parked events as they change, on either node.
func TestSharedOwnerDecidesOnWhatIsStored(t *testing.T) {
	sa, a, b, c := ownerAndOther(t)
	orders(t, sa, 2)
	got := collect(t, a, c, 2, 5*time.Second, "two deliveries")
	parked := func(want int) { // as each node's metrics count them
		for _, m := range []*Manager{a, b} {
			eventually(t, 5*time.Second, fmt.Sprintf("%d parked", want), func() bool {
				counts, err := m.Counts()
				return err == nil && len(counts) == 1 && counts[0].Parked == want
			})
		}
	}
	parked(0)
	for _, tok := range []Token{got[0].Token, got[1].Token} {
		if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{tok}, Action: Park}); err != nil || out.Done != 1 {
			t.Fatalf("park on node b: %+v %v", out, err)
		}
	}
	parked(2)
	if n, err := a.Replay(ctx, "billing", []uint64{got[0].Record.ID}); err != nil || n != 1 {
		t.Fatalf("replay on the owner of what node b parked: %d %v", n, err)
	}
	parked(1)
	if n, err := b.Replay(ctx, "billing", []uint64{got[1].Record.ID}); err != nil || n != 1 {
		t.Fatalf("replay on node b: %d %v", n, err)
	}
	parked(0)
	replayed := collect(t, a, c, 2, 5*time.Second, "both replays")
	out, err := a.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{replayed[0].Token, replayed[1].Token}})
	if err != nil || out.Done != 2 {
		t.Fatalf("acknowledging the replays on the owner: %+v %v", out, err)
	}
}

// ownerAndOther starts nodes a and b on a new database, creates billing
// (one partition, acknowledge timeout 1 min) on a and connects its consumer
// wa there, so that a delivers the partition and b does not.
func ownerAndOther(t *testing.T) (sa *store.Store, a, b *Manager, c *Consumer) {
	t.Helper()
	sa, _, a, b = twoNodes(t, 100, time.Minute)
	return sa, a, b, connect(t, a, "billing", "wa")
}

// twoNodes starts the nodes a and b, with their stores, on a new database,
// and creates on a the subscription "billing" of one partition with window
// deliveries in flight at most, acknowledged within ackTimeout.
func twoNodes(t *testing.T, window int, ackTimeout time.Duration) (sa, sb *store.Store, a, b *Manager) {
	t.Helper()
	url := pg.Database(t)
	sa, a = sharedNode(t, url, "node-a", 3*time.Second)
	sb, b = sharedNode(t, url, "node-b", 3*time.Second)
	d := definition(1, window)
	d.Options.AcknowledgeTimeout = ackTimeout
	if _, err := a.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	return sa, sb, a, b
}

// TestSharedSettlesGoToTheHolder settles on node b what node a delivers:
// the settle puts only an entry into the partition record's inbox, node a
// is woken to take it in, and frees the window with its next poll; the
// holder's deliveries of new events leave the record as it is, so settles
// elsewhere are not refused for them; and a write acknowledging one
// delivery, sent to both nodes at once, is stored once.
func TestSharedSettlesGoToTheHolder(t *testing.T) {
	sa, _, a, b := twoNodes(t, 1, time.Minute) // one delivery in flight at a time
	c := connect(t, a, "billing", "wa")
	const rounds = 10
	orders(t, sa, rounds+2)
	record := func() partitionRecord {
		t.Helper()
		rec, err := readPartitionRecord(sa, "billing", 0)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	first := collect(t, a, c, 1, 5*time.Second, "the first delivery")
	before := record()
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{first[0].Token}}); err != nil || out.Done != 1 {
		t.Fatalf("acknowledge on node b: %+v %v", out, err)
	}
	inboxed := record()
	if !inboxed.same(before) || len(inboxed.Inbox) != 1 || inboxed.Inbox[0].EventID != first[0].Record.ID {
		t.Fatalf("the record after a settle elsewhere: %+v, before %+v", inboxed, before)
	}
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{first[0].Token}}); err != nil || len(out.Stale) != 1 {
		t.Fatalf("the same acknowledgement again on node b: %+v %v", out, err)
	}
	select {
	case <-c.Woken():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder's consumer was not woken by the settle elsewhere")
	}
	second := collect(t, a, c, 1, 5*time.Second, "the second delivery, once the window is free")
	taken := record()
	if taken.Seq != before.Seq+1 || len(taken.Inbox) != 0 {
		t.Fatalf("the record after the holder took its inbox in: %+v", taken)
	}
	if _, found, err := sa.State(spaceDeliveries, deliveryKey("billing", 0, first[0].Record.ID)); err != nil || found {
		t.Fatalf("the first delivery's record after it was taken in: found %v, %v", found, err)
	}
	// Rounds of a write acknowledging one delivery, on both nodes at once.
	pending := second[0]
	for round := range rounds {
		results := make(chan error, 2)
		for i, m := range []*Manager{a, b} {
			go func() {
				write := storetest.Candidate(fmt.Sprintf("/invoices/%d", round), "io.example.invoiced", fmt.Sprintf(`{"node":%d}`, i))
				_, err := m.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{pending.Token},
					Write: store.Request{Events: []event.Candidate{write}}})
				results <- err
			}()
		}
		var held int
		for range 2 {
			switch err := <-results; {
			case err == nil:
				held++
			case !errors.Is(err, ErrNotHeld):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if held != 1 {
			t.Fatalf("round %d: %d writes acknowledged one delivery", round, held)
		}
		if round < rounds-1 {
			pending = collect(t, a, c, 1, 5*time.Second, "the next delivery")[0]
		}
	}
	if n := sa.Durable(); n != 2*(rounds+2)+rounds {
		t.Fatalf("%d events, want %d: a write acknowledging a settled delivery was stored", n, 2*(rounds+2)+rounds)
	}
	// The holder's deliveries of new events leave the record as it is.
	a2 := definition(1, 100)
	a2.Name = "wide"
	if _, err := a.Create(ctx, a2); err != nil {
		t.Fatal(err)
	}
	w := connect(t, a, "wide", "ww")
	collect(t, a, w, rounds+2, 5*time.Second, "the wide subscription's deliveries")
	wide, err := readPartitionRecord(sa, "wide", 0)
	if err != nil {
		t.Fatal(err)
	}
	if wide.Seq != 1 { // the claim
		t.Fatalf("the record after %d deliveries of new events: %+v, want Seq 1 (the claim)", rounds+2, wide)
	}
}

// TestSharedSettleReadBeforeAResend has node b read the partition while
// attempt 1 of a delivery is in flight, and node a, its holder, send it
// again (attempt 2) before b commits an acknowledgement of attempt 1: the
// commit is refused as fenced, so that b decides again on what is stored
// and answers the token as stale. Stored into the inbox instead, the
// acknowledgement would be answered as done and then dropped by the
// holder, whose delivery is of another attempt.
func TestSharedSettleReadBeforeAResend(t *testing.T) {
	sa, sb, a, b := twoNodes(t, 1, time.Second)
	c := connect(t, a, "billing", "wa")
	orders(t, sa, 1)
	first := collect(t, a, c, 1, 5*time.Second, "attempt 1")[0]
	sub, err := b.lookup("billing")
	if err != nil {
		t.Fatal(err)
	}
	sub.mu.Lock()
	err = b.refresh(sub, 0, true)
	sub.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	again := collect(t, a, c, 1, 5*time.Second, "attempt 2, on the timeout")[0]
	if again.Token.Attempt != first.Token.Attempt+1 || again.Record.ID != first.Record.ID {
		t.Fatalf("sent again: %+v, first %+v", again.Token, first.Token)
	}
	sub.mu.Lock()
	var out Settled
	_, err = sub.commitSettles(ctx, sb, store.Request{InReadOnly: true}, []int{0}, true,
		b.settleFunc(sub, Settle{Subscription: "billing", Tokens: []Token{first.Token}}, &out))
	sub.mu.Unlock()
	if !errors.Is(err, errFenced) {
		t.Fatalf("b's acknowledgement of attempt 1, decided before attempt 2 was sent: %+v, %v", out, err)
	}
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{first.Token}}); err != nil || out.Done != 0 || len(out.Stale) != 1 {
		t.Fatalf("b's acknowledgement of attempt 1, decided on what is stored: %+v %v", out, err)
	}
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{again.Token}}); err != nil || out.Done != 1 {
		t.Fatalf("b's acknowledgement of attempt 2: %+v %v", out, err)
	}
}

// TestSharedLagFollowsTheHolder reads the lag on a node that does not
// hold the partition while the holder delivers: it follows the holder's
// cursor as the records show it.
func TestSharedLagFollowsTheHolder(t *testing.T) {
	sa, _, a, b := twoNodes(t, 3, time.Minute) // three deliveries in flight at most
	c := connect(t, a, "billing", "wa")
	lag := func(want uint64) {
		t.Helper()
		if got, err := b.Lag("billing"); err != nil || got != want {
			t.Fatalf("lag on node b: %d %v, want %d", got, err, want)
		}
	}
	orders(t, sa, 5)
	lag(5)
	first := collect(t, a, c, 3, 5*time.Second, "a window of deliveries")
	lag(2)
	if out, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: []Token{first[0].Token, first[1].Token}}); err != nil || out.Done != 2 {
		t.Fatalf("acknowledge on node b: %+v %v", out, err)
	}
	collect(t, a, c, 2, 5*time.Second, "the rest")
	lag(0)
	orders(t, sa, 4)
	lag(4)
}

// TestSharedLagAfterATakeover reads the lag on a node before it takes a
// partition over from another node that delivered meanwhile: the cursor
// it reads with the partition, and its own deliveries after, count once.
func TestSharedLagAfterATakeover(t *testing.T) {
	sa, _, a, b := twoNodes(t, 3, time.Minute)
	orders(t, sa, 5)
	if got, err := b.Lag("billing"); err != nil || got != 5 {
		t.Fatalf("lag on node b before any delivery: %d %v", got, err)
	}
	ca := connect(t, a, "billing", "wa")
	collect(t, a, ca, 3, 5*time.Second, "a window of deliveries on node a")
	if err := a.Disconnect(ctx, ca); err != nil {
		t.Fatal(err)
	}
	cb := connect(t, b, "billing", "wb")
	var got []Delivered
	eventually(t, 10*time.Second, "every event delivered on node b", func() bool {
		ds := poll(t, b, cb)
		if len(ds) > 0 {
			if _, err := b.Settle(ctx, Settle{Subscription: "billing", Tokens: tokensOf(ds)}); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, ds...)
		return len(got) >= 5
	})
	if lag, err := b.Lag("billing"); err != nil || lag != 0 {
		t.Fatalf("lag on node b after it delivered everything: %d %v, want 0", lag, err)
	}
}

// tokensOf returns the tokens of ds.
func tokensOf(ds []Delivered) []Token {
	out := make([]Token, len(ds))
	for i, d := range ds {
		out[i] = d.Token
	}
	return out
}

// storedRecords counts the records of the subscription name in every space
// keyed by it, and its definition, as the store holds them.
func storedRecords(t *testing.T, s *store.Store, name string) int {
	t.Helper()
	n := 0
	for _, space := range append([]string{spaceDefinitions}, nameSpaces...) {
		prefix := name + "/"
		if space == spaceDefinitions {
			prefix = name
		}
		it := s.States(space, prefix)
		for it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestSharedDeleteRacesDeliveries deletes a subscription on one node while
// the other node delivers its events, again and again: nothing of it is
// left behind (no record its holder committed after the delete listed its
// records), its consumer ends, and the name created again starts empty and
// loads at a start.
func TestSharedDeleteRacesDeliveries(t *testing.T) {
	url := pg.Database(t)
	sa, a := sharedNode(t, url, "node-a", 3*time.Second)
	_, b := sharedNode(t, url, "node-b", 3*time.Second)
	stopWriting := storetest.Loop(1, func(_, i int) bool {
		_, err := sa.Write(ctx, []event.Candidate{storetest.Candidate(fmt.Sprintf("/orders/%d", i%5), "io.example.placed", `{}`)}, nil)
		return err == nil
	})
	var once sync.Once
	stop := func() { once.Do(stopWriting) }
	defer stop()
	for round := range 8 {
		if _, err := b.Create(ctx, definition(4, 1000)); err != nil {
			t.Fatalf("round %d: create: %v", round, err)
		}
		var c *Consumer
		eventually(t, 5*time.Second, "a consumer on node a", func() bool {
			var err error
			c, err = a.Connect(ctx, "billing", "wa")
			return err == nil
		})
		polled := make(chan struct{})
		go func() { // node a delivers until the delete ends its consumer
			defer close(polled)
			for {
				if _, _, err := a.Poll(ctx, c); err != nil {
					return
				}
				select {
				case <-c.Ended():
					return
				default:
				}
			}
		}()
		time.Sleep(time.Duration(50+round*20) * time.Millisecond)
		if err := b.Delete(ctx, "billing"); err != nil {
			t.Fatalf("round %d: delete: %v", round, err)
		}
		<-polled
		if n := storedRecords(t, sa, "billing"); n != 0 {
			t.Fatalf("round %d: %d records of the deleted subscription left", round, n)
		}
	}
	stop()
	if _, err := b.Create(ctx, definition(2, 100)); err != nil {
		t.Fatal(err)
	}
	fresh := NewManager(sa, 10)
	if err := fresh.Load(); err != nil {
		t.Fatalf("a start after the deletes: %v", err)
	}
	defer fresh.Stop(ctx)
	if info, err := fresh.Get("billing"); err != nil || len(info.Partitions) != 2 || info.InFlight != 0 {
		t.Fatalf("the name created again: %+v %v", info, err)
	}
}
