package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	goclient "github.com/eventstore-service/eventstore/modules/consumer"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// consuming is a Consume of modules/consumer (imported as goclient: the
// package's consumer is the raw stream of subscriptions_test.go) running
// against the binary.
type consuming struct {
	cancel context.CancelFunc
	done   chan error
	stats  *goclient.Stats
}

// startConsuming runs fn (a Consume or ConsumeReactions) in a goroutine
// until the test stops it.
func startConsuming(t *testing.T, fn func(ctx context.Context, stats *goclient.Stats) error) *consuming {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &consuming{cancel: cancel, done: make(chan error, 1), stats: &goclient.Stats{}}
	go func() { c.done <- fn(ctx, c.stats) }()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// stop ends the Consume and returns its error, which must be the end of
// its context.
func (c *consuming) stop(t *testing.T) {
	t.Helper()
	c.cancel()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Consume did not return after its context ended")
	}
}

// settledAll waits until the subscription has no lag and nothing in
// flight, and returns its state.
func settledAll(t *testing.T, client *goclient.Client, name string, within time.Duration) goclient.Subscription {
	t.Helper()
	var s goclient.Subscription
	waitUntil(t, within, func() bool {
		var err error
		s, err = client.Get(context.Background(), name)
		return err == nil && s.Lag == 0 && s.InFlight == 0
	})
	return s
}

// handled is one call of a handler.
type handled struct {
	id, attempt, partition int
	subject                string
	at                     time.Time
}

// recorder records the deliveries a handler sees.
type recorder struct {
	mu    sync.Mutex
	calls []handled
}

func (r *recorder) add(d goclient.Delivery) handled {
	id, _ := strconv.Atoi(d.Event.ID)
	h := handled{id: id, attempt: d.Attempt, partition: d.Partition, subject: d.Event.Subject, at: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, h)
	return h
}

func (r *recorder) snapshot() []handled {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestConsumerOrderAndBatchAcks consumes 300 events over 30 subjects in 4
// partitions with modules/consumer, 4 partitions at once: every event is
// handled once, each partition's in id order, in its partition; the
// batched acknowledgements settle everything (positions at the partitions'
// last events, lag 0) in far fewer requests than events.
func TestConsumerOrderAndBatchAcks(t *testing.T) { eachTarget(t, testConsumerOrderAndBatchAcks) }

func testConsumerOrderAndBatchAcks(t *testing.T, start starter) {
	inst := start(t)
	var pairs []string
	for i := range 300 {
		pairs = append(pairs, fmt.Sprintf("/orders/%d", i%30), "io.example.placed")
	}
	mustWrite(t, inst, candidates(pairs...))
	client := goclient.NewClient(inst.URL("http"), harness.Token, nil)
	if _, err := client.Create(context.Background(), "projection", "/orders", goclient.Options{Recursive: true, Partitions: 4, MaxInFlight: 50}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c := startConsuming(t, func(ctx context.Context, stats *goclient.Stats) error {
		return client.Consume(ctx, "projection", "w1", func(ctx context.Context, d goclient.Delivery) error {
			rec.add(d)
			time.Sleep(time.Millisecond) // a little work, so that acknowledgements gather
			return nil
		}, goclient.ConsumeOptions{Concurrency: 4, Stats: stats})
	})
	s := settledAll(t, client, "projection", 60*time.Second)
	waitUntil(t, 10*time.Second, func() bool { return c.stats.Acknowledged.Load() == 300 })
	c.stop(t)

	calls := rec.snapshot()
	last := map[int]int{}    // partition → last id handled
	highest := map[int]int{} // partition → its highest event id
	seen := map[int]int{}
	for _, h := range calls {
		seen[h.id]++
		if want := subscriptions.PartitionOf(h.subject, 4); h.partition != want {
			t.Fatalf("event %d of %s delivered as partition %d, want %d", h.id, h.subject, h.partition, want)
		}
		if prev, ok := last[h.partition]; ok && h.id <= prev {
			t.Fatalf("partition %d: event %d handled after %d", h.partition, h.id, prev)
		}
		last[h.partition] = h.id
		highest[h.partition] = max(highest[h.partition], h.id)
	}
	if len(calls) != 300 || len(seen) != 300 {
		t.Fatalf("%d calls for %d events, want each of 300 once", len(calls), len(seen))
	}
	for _, p := range s.Partitions {
		pos, err := strconv.Atoi(p.Position)
		if err != nil || pos < highest[p.Partition] {
			t.Errorf("partition %d at position %q, want at least its last event %d", p.Partition, p.Position, highest[p.Partition])
		}
	}
	m := metrics(t, inst)
	requests := m[`eventstore_http_requests_total{code="200",method="POST",route="/api/v1/acknowledge-deliveries"}`]
	if acked := m[`eventstore_subscription_deliveries_total{outcome="acknowledged",subscription="projection"}`]; acked != 300 || requests < 1 || requests > 150 {
		t.Fatalf("%v deliveries acknowledged in %v requests, want 300 in batches", acked, requests)
	}
	t.Logf("300 events acknowledged in %v requests", requests)
}

// TestConsumerRetryAndPark maps the handler's results on the real
// service: Park parks the event with its reason, Retry sends it again with
// the next attempt, a plain error retries after the default delay of 1s.
func TestConsumerRetryAndPark(t *testing.T) { eachTarget(t, testConsumerRetryAndPark) }

func testConsumerRetryAndPark(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, candidates("/jobs/1", "io.example.ok", "/jobs/2", "io.example.bad", "/jobs/3", "io.example.flaky", "/jobs/4", "io.example.failing"))
	client := goclient.NewClient(inst.URL("http"), harness.Token, nil)
	if _, err := client.Create(context.Background(), "jobs", "/jobs", goclient.Options{Recursive: true, MaxDeliveries: 5}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c := startConsuming(t, func(ctx context.Context, stats *goclient.Stats) error {
		return client.Consume(ctx, "jobs", "w1", func(ctx context.Context, d goclient.Delivery) error {
			rec.add(d)
			switch {
			case d.Event.Type == "io.example.bad":
				return goclient.Park("cannot parse the job")
			case d.Event.Type == "io.example.flaky" && d.Attempt == 1:
				return goclient.Retry(0, errors.New("try again"))
			case d.Event.Type == "io.example.failing" && d.Attempt == 1:
				return errors.New("failed")
			}
			return nil
		}, goclient.ConsumeOptions{Stats: stats})
	})
	s := settledAll(t, client, "jobs", 30*time.Second)
	c.stop(t)
	if s.Parked != 1 {
		t.Fatalf("%d parked, want 1", s.Parked)
	}
	attempts := map[int][]int{}
	at := map[int][]time.Time{}
	for _, h := range rec.snapshot() {
		attempts[h.id] = append(attempts[h.id], h.attempt)
		at[h.id] = append(at[h.id], h.at)
	}
	for id, want := range map[int][]int{0: {1}, 1: {1}, 2: {1, 2}, 3: {1, 2}} {
		if !slices.Equal(attempts[id], want) {
			t.Errorf("event %d handled in attempts %v, want %v", id, attempts[id], want)
		}
	}
	if gap := at[3][1].Sub(at[3][0]); gap < 900*time.Millisecond {
		t.Errorf("a plain error was retried after %s, want the default delay of 1s", gap)
	}
	parked, err := client.Parked(context.Background(), "jobs")
	if err != nil || len(parked) != 1 {
		t.Fatalf("parked events: %v %+v", err, parked)
	}
	if p := parked[0]; p.Event.ID != "1" || p.Reason != "cannot parse the job" || p.Attempts != 1 || p.Event.Type != "io.example.bad" {
		t.Fatalf("parked %+v", p)
	}
	if c.stats.Parked.Load() != 1 || c.stats.Retried.Load() != 2 || c.stats.Acknowledged.Load() != 3 {
		t.Errorf("stats: parked %d, retried %d, acknowledged %d", c.stats.Parked.Load(), c.stats.Retried.Load(), c.stats.Acknowledged.Load())
	}
}

// TestConsumerEndsForGood: a second consumer of the same name replaces
// the first, a deleted subscription ends its consumer, an unknown one is
// refused at once; each with its error.
func TestConsumerEndsForGood(t *testing.T) { eachTarget(t, testConsumerEndsForGood) }

func testConsumerEndsForGood(t *testing.T, start starter) {
	inst := start(t)
	client := goclient.NewClient(inst.URL("http"), harness.Token, nil)
	if _, err := client.Create(context.Background(), "s", "/a", goclient.Options{}); err != nil {
		t.Fatal(err)
	}
	nothing := func(context.Context, goclient.Delivery) error { return nil }
	first := make(chan error, 1)
	go func() { first <- client.Consume(t.Context(), "s", "w", nothing, goclient.ConsumeOptions{}) }()
	waitUntil(t, 10*time.Second, func() bool {
		s, err := client.Get(context.Background(), "s")
		return err == nil && len(s.Consumers) == 1
	})
	second := make(chan error, 1)
	stats := &goclient.Stats{}
	go func() {
		second <- client.Consume(t.Context(), "s", "w", nothing, goclient.ConsumeOptions{Stats: stats})
	}()
	select {
	case err := <-first:
		if !errors.Is(err, goclient.ErrConsumerReplaced) {
			t.Fatalf("the replaced consumer returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced consumer goes on")
	}
	if err := client.Delete(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		if !errors.Is(err, goclient.ErrSubscriptionDeleted) || stats.Connects.Load() != 1 {
			t.Fatalf("the consumer of a deleted subscription returned %v after %d connects", err, stats.Connects.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer of a deleted subscription goes on")
	}
	err := client.Consume(t.Context(), "s", "w", nothing, goclient.ConsumeOptions{})
	var apiErr *goclient.Error
	if !errors.Is(err, goclient.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Message != "subscription 's' not found" {
		t.Fatalf("consuming an unknown subscription: %v", err)
	}
}

// TestConsumerReactionsExactlyOnceAcrossRestart has two consumers answer
// each of 400 orders with an invoice, written with the acknowledgement of
// the order's delivery, while the server is stopped with SIGTERM and
// started again on the same port mid-way: Consume reconnects by itself,
// and every order has exactly one invoice.
func TestConsumerReactionsExactlyOnceAcrossRestart(t *testing.T) {
	const orders = 400
	dir := t.TempDir()
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	base := inst.URL("http")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	args[len(args)-1] = "--http-port=" + u.Port() // the restart keeps the address the consumers know
	var pairs []string
	for i := range orders {
		pairs = append(pairs, fmt.Sprintf("/orders/%d", i), "io.example.order-placed")
	}
	mustWrite(t, inst, candidates(pairs...))
	client := goclient.NewClient(base, harness.Token, nil)
	if _, err := client.Create(context.Background(), "invoicing", "/orders",
		goclient.Options{Recursive: true, Partitions: 4, MaxInFlight: 20, AcknowledgeTimeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	invoice := func(ctx context.Context, d goclient.Delivery) (goclient.Reaction, error) {
		time.Sleep(2 * time.Millisecond)
		return goclient.Reaction{Events: []goclient.EventCandidate{{
			Source: "https://billing", Subject: "/invoices/" + strings.TrimPrefix(d.Event.Subject, "/orders/"),
			Type: "io.example.invoiced", Data: map[string]string{"order": d.Event.ID},
		}}}, nil
	}
	var workers []*consuming
	for _, name := range []string{"w1", "w2"} {
		workers = append(workers, startConsuming(t, func(ctx context.Context, stats *goclient.Stats) error {
			return client.ConsumeReactions(ctx, "invoicing", name, invoice,
				goclient.ConsumeOptions{Stats: stats, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 300 * time.Millisecond})
		}))
	}
	reactions := func() int64 {
		var n int64
		for _, w := range workers {
			n += w.stats.Reactions.Load()
		}
		return n
	}
	waitUntil(t, 30*time.Second, func() bool { return reactions() >= orders/4 })
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	if n := reactions(); n >= orders {
		t.Fatalf("all %d reactions were written before the restart: it tested no restart in the middle of the work", n)
	}
	inst = harness.Start(t, bin, args...)
	settledAll(t, client, "invoicing", 90*time.Second)
	for _, w := range workers {
		w.stop(t)
		if w.stats.Connects.Load() < 2 {
			t.Errorf("a consumer connected %d times, want again after the restart", w.stats.Connects.Load())
		}
	}
	invoices := map[string]int{}
	for _, l := range stream(t, inst, "/api/v1/read-events", `{"subject":"/invoices","options":{"recursive":true}}`) {
		invoices[parseEvent(t, l.Payload).Subject]++
	}
	for i := range orders {
		if n := invoices[fmt.Sprintf("/invoices/%d", i)]; n != 1 {
			t.Fatalf("order %d has %d invoices", i, n)
		}
	}
	var stale, dropped int64
	for _, w := range workers {
		stale += w.stats.Stale.Load()
		dropped += w.stats.Dropped.Load()
	}
	t.Logf("%d reactions written (%d stale, %d dropped) across the restart", reactions(), stale, dropped)
}
