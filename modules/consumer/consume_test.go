package consumer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConsumeOrderAndBatches: 200 deliveries over two partitions, handled
// two partitions at once, each partition in order and never by two
// goroutines at once; the acknowledgements go in a few batches of at most
// AckBatchSize, every token once.
func TestConsumeOrderAndBatches(t *testing.T) {
	f := newFakeService(t)
	stats := &Stats{}
	gate := make(chan struct{})
	var mu sync.Mutex
	seen := map[int][]int{}
	busy := map[int]bool{}
	var concurrent, most atomic.Int32
	handler := func(ctx context.Context, d Delivery) error {
		<-gate
		n := concurrent.Add(1)
		defer concurrent.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		if busy[d.Partition] {
			t.Errorf("partition %d handled by two goroutines at once", d.Partition)
		}
		busy[d.Partition] = true
		var id int
		fmt.Sscan(d.Event.ID, &id)
		seen[d.Partition] = append(seen[d.Partition], id)
		mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		mu.Lock()
		busy[d.Partition] = false
		mu.Unlock()
		return nil
	}
	r := runConsume(t, f.client(), handler, ConsumeOptions{Concurrency: 2, AckBatchSize: 50, AckInterval: time.Hour, Stats: stats})
	s := f.stream()
	s.send(assignmentLine(0, 1))
	for id := range 200 {
		s.send(deliveryLine(fmt.Sprintf("t%d", id), id%2, 1, id, fmt.Sprintf("/orders/%d", id%2)))
	}
	waitFor(t, "200 deliveries read", func() bool { return stats.Deliveries.Load() == 200 })
	close(gate)
	waitFor(t, "200 acknowledged", func() bool { return stats.Acknowledged.Load() == 200 })
	if err := r.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume returned %v, want context.Canceled", err)
	}
	for p, ids := range seen {
		if len(ids) != 100 || !slices.IsSorted(ids) {
			t.Errorf("partition %d handled %d deliveries, in order %v", p, len(ids), slices.IsSorted(ids))
		}
	}
	if most.Load() != 2 {
		t.Errorf("at most %d handlers at once, want 2", most.Load())
	}
	requests, _ := f.settled("acknowledge-deliveries")
	tokens := map[string]int{}
	for _, req := range requests {
		if len(req) > 50 {
			t.Errorf("a batch of %d tokens, AckBatchSize is 50", len(req))
		}
		for _, tok := range req {
			tokens[tok]++
		}
	}
	if len(tokens) != 200 || len(requests) > 10 {
		t.Errorf("%d tokens acknowledged in %d requests, want 200 in a few", len(tokens), len(requests))
	}
	for tok, n := range tokens {
		if n != 1 {
			t.Errorf("token %s acknowledged %d times", tok, n)
		}
	}
}

// TestConsumeSequentialByDefault: without Concurrency, the handler never
// runs twice at once, whatever the partitions.
func TestConsumeSequentialByDefault(t *testing.T) {
	f := newFakeService(t)
	stats := &Stats{}
	var concurrent, most atomic.Int32
	handler := func(ctx context.Context, d Delivery) error {
		n := concurrent.Add(1)
		defer concurrent.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		time.Sleep(time.Millisecond)
		return nil
	}
	r := runConsume(t, f.client(), handler, ConsumeOptions{Stats: stats})
	s := f.stream()
	s.send(assignmentLine(0, 1, 2, 3))
	for id := range 40 {
		s.send(deliveryLine(fmt.Sprintf("t%d", id), id%4, 1, id, "/s"))
	}
	waitFor(t, "40 acknowledged", func() bool { return stats.Acknowledged.Load() == 40 })
	_ = r.stop()
	if most.Load() != 1 {
		t.Errorf("%d handlers ran at once, want 1", most.Load())
	}
}

// TestConsumeSettlesByResult maps the handler's results to settles.
func TestConsumeSettlesByResult(t *testing.T) {
	f := newFakeService(t)
	stats := &Stats{}
	var reported []string
	var mu sync.Mutex
	results := map[string]error{
		"ok":      nil,
		"later":   Retry(2*time.Second, errors.New("busy")),
		"bad":     Park("bad data"),
		"wrapped": fmt.Errorf("gave up: %w", Park(strings.Repeat("é", 600))),
		"fails":   errors.New("boom"),
		"huge":    Retry(3*time.Hour, nil),
	}
	handler := func(ctx context.Context, d Delivery) error { return results[d.Token] }
	r := runConsume(t, f.client(), handler, ConsumeOptions{Stats: stats, OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}})
	s := f.stream()
	s.send(assignmentLine(0))
	for i, tok := range []string{"ok", "later", "bad", "wrapped", "fails", "huge"} {
		attempt := 1
		if tok == "fails" {
			attempt = 3
		}
		s.send(deliveryLine(tok, 0, attempt, i, "/s"))
	}
	waitFor(t, "every delivery settled", func() bool {
		return stats.Acknowledged.Load() == 1 && stats.Retried.Load() == 3 && stats.Parked.Load() == 2
	})
	_ = r.stop()
	_, retries := f.settled("retry-deliveries")
	after := map[string]string{}
	for _, b := range retries {
		after[b.Deliveries[0]] = b.After
	}
	if want := map[string]string{"later": "2s", "fails": "4s", "huge": "1h0m0s"}; !mapsEqual(after, want) {
		t.Errorf("retries %v, want %v", after, want)
	}
	_, parks := f.settled("park-deliveries")
	reasons := map[string]string{}
	for _, b := range parks {
		reasons[b.Deliveries[0]] = b.Reason
	}
	if reasons["bad"] != "bad data" || len(reasons["wrapped"]) != 1024 || reasons["wrapped"] != strings.Repeat("é", 512) {
		t.Errorf("park reasons %q (%d bytes)", reasons["bad"], len(reasons["wrapped"]))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !strings.Contains(reported[0], "event 4 (partition 0, attempt 3): boom") {
		t.Errorf("reported %q, want the plain error only", reported)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestConsumeDropsStaleResults: when a partition moves away, its waiting
// deliveries and the result of its running handler are dropped, the
// handler's context ends, and nothing of it is sent; tokens the service
// finds stale are counted.
func TestConsumeDropsStaleResults(t *testing.T) {
	f := newFakeService(t)
	f.stale["y"] = true
	stats := &Stats{}
	started := make(chan struct{})
	var canceled atomic.Bool
	handler := func(ctx context.Context, d Delivery) error {
		if d.Partition == 1 {
			close(started)
			<-ctx.Done() // held until the partition moves
			canceled.Store(true)
			return nil
		}
		return nil
	}
	r := runConsume(t, f.client(), handler, ConsumeOptions{Concurrency: 2, Stats: stats})
	s := f.stream()
	s.send(assignmentLine(0, 1), deliveryLine("a", 1, 1, 1, "/p1"), deliveryLine("b", 1, 1, 2, "/p1"), deliveryLine("c", 1, 1, 3, "/p1"))
	<-started
	s.send(assignmentLine(0))
	waitFor(t, "the three of partition 1 dropped", func() bool { return stats.Dropped.Load() == 3 })
	if !canceled.Load() {
		t.Error("the running handler's context did not end with the move")
	}
	s.send(deliveryLine("x", 0, 1, 4, "/p0"), deliveryLine("y", 0, 1, 5, "/p0"))
	waitFor(t, "x acknowledged, y stale", func() bool { return stats.Acknowledged.Load() == 1 && stats.Stale.Load() == 1 })
	_ = r.stop()
	requests, _ := f.settled("acknowledge-deliveries")
	for _, req := range requests {
		for _, tok := range req {
			if tok == "a" || tok == "b" || tok == "c" {
				t.Errorf("the stale token %s was sent", tok)
			}
		}
	}
}

// TestConsumeFlushesBeforeClosing: when Consume's context ends, the
// handler's finished work is acknowledged while the stream is still open.
func TestConsumeFlushesBeforeClosing(t *testing.T) {
	f := newFakeService(t)
	stats := &Stats{}
	var streamOpenAtAck atomic.Bool
	var s *fakeStream
	var sMu sync.Mutex
	f.onSettle = func(route string, b settleBody) {
		sMu.Lock()
		defer sMu.Unlock()
		select {
		case <-s.gone:
		default:
			streamOpenAtAck.Store(true)
		}
	}
	inHandler := make(chan struct{})
	handler := func(ctx context.Context, d Delivery) error {
		close(inHandler)
		<-ctx.Done() // finishes its work as Consume ends
		return nil
	}
	r := runConsume(t, f.client(), handler, ConsumeOptions{AckInterval: time.Hour, Stats: stats})
	sMu.Lock()
	s = f.stream()
	sMu.Unlock()
	s.send(assignmentLine(0), deliveryLine("last", 0, 1, 0, "/s"), deliveryLine("waiting", 0, 1, 1, "/s"))
	<-inHandler
	waitFor(t, "both read", func() bool { return stats.Deliveries.Load() == 2 })
	if err := r.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume returned %v", err)
	}
	requests, _ := f.settled("acknowledge-deliveries")
	if len(requests) != 1 || len(requests[0]) != 1 || requests[0][0] != "last" || !streamOpenAtAck.Load() {
		t.Fatalf("acknowledged %v, the stream open then: %v", requests, streamOpenAtAck.Load())
	}
	select {
	case <-s.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open after Consume returned")
	}
	if stats.Dropped.Load() != 1 {
		t.Errorf("dropped %d, want the waiting delivery", stats.Dropped.Load())
	}
}

// TestConsumeReconnects: refused streams and ended streams are opened
// again after growing, jittered delays; "consumer replaced" ends Consume.
func TestConsumeReconnects(t *testing.T) {
	f := newFakeService(t)
	f.refusals = []refusal{{status: 503, message: "service unavailable: too many streams"}, {status: 500, message: "internal error: x"}, {status: 503, message: "service unavailable: shutting down"}}
	stats := &Stats{}
	var errs atomic.Int32
	lo, hi := 20*time.Millisecond, 60*time.Millisecond
	r := runConsume(t, f.client(), func(context.Context, Delivery) error { return nil },
		ConsumeOptions{ReconnectMin: lo, ReconnectMax: hi, Stats: stats, OnError: func(error) { errs.Add(1) }})
	first := f.stream()
	first.send(assignmentLine(0))
	first.end() // the service ends the stream: open it again at once (the failures were reset)
	second := f.stream()
	second.send(assignmentLine(0), `{"type":"error","payload":{"error":"consumer replaced"}}`)
	err := r.wait()
	if !errors.Is(err, ErrConsumerReplaced) {
		t.Fatalf("Consume returned %v, want ErrConsumerReplaced", err)
	}
	f.mu.Lock()
	opens := slices.Clone(f.opens)
	f.mu.Unlock()
	if len(opens) != 5 || stats.Connects.Load() != 2 || errs.Load() != 4 {
		t.Fatalf("%d opens, %d connects, %d errors reported", len(opens), stats.Connects.Load(), errs.Load())
	}
	// After failures 1, 2, 3: [lo/2, lo], [lo, 2lo], [hi/2, hi]; after the ended stream: [lo/2, lo].
	bounds := [][2]time.Duration{{lo / 2, lo}, {lo, 2 * lo}, {hi / 2, hi}, {lo / 2, lo}}
	for i, b := range bounds {
		gap := opens[i+1].Sub(opens[i])
		if gap < b[0] || gap > b[1]+time.Second {
			t.Errorf("gap %d is %s, want %s to %s", i, gap, b[0], b[1])
		}
	}
}

// TestConsumeEndsForGood: a 4xx refusal and the end of the subscription
// end Consume with their errors.
func TestConsumeEndsForGood(t *testing.T) {
	f := newFakeService(t)
	f.refusals = []refusal{{status: 404, message: "subscription 'billing' not found"}}
	r := runConsume(t, f.client(), func(context.Context, Delivery) error { return nil }, ConsumeOptions{})
	if err := r.wait(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Consume returned %v, want ErrNotFound", err)
	}

	r = runConsume(t, f.client(), func(context.Context, Delivery) error { return nil }, ConsumeOptions{})
	f.stream().send(assignmentLine(0), `{"type":"error","payload":{"error":"subscription deleted"}}`)
	if err := r.wait(); !errors.Is(err, ErrSubscriptionDeleted) {
		t.Fatalf("Consume returned %v, want ErrSubscriptionDeleted", err)
	}
}

// TestConsumeHeartbeatTimeout: a stream that is not answered, or that
// falls silent, is closed and opened again.
func TestConsumeHeartbeatTimeout(t *testing.T) {
	f := newFakeService(t)
	f.refusals = []refusal{{hang: true}}
	stats := &Stats{}
	var reported atomic.Value
	// The open's timer starts after this, on the client; the fake service
	// sees each open later, by a latency that load makes unbounded, so
	// the unanswered open's time is measured from here.
	began := time.Now()
	r := runConsume(t, f.client(), func(context.Context, Delivery) error { return nil },
		ConsumeOptions{HeartbeatTimeout: 300 * time.Millisecond, ReconnectMin: time.Millisecond, Stats: stats,
			OnError: func(err error) { reported.Store(err) }})
	first := f.stream()
	start := time.Now()
	for range 3 { // heartbeats keep it alive
		first.send(`{"type":"heartbeat","payload":{}}`)
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-first.gone:
		t.Fatal("a stream with heartbeats was taken for dead")
	default:
	}
	second := f.stream() // after silence
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("reconnected after %s", waited)
	}
	<-first.gone
	if err, _ := reported.Load().(error); !errors.Is(err, errDeadStream) {
		t.Errorf("reported %v", err)
	}
	second.send(assignmentLine())
	waitFor(t, "the second stream in use", func() bool { return stats.Connects.Load() == 2 })
	_ = r.stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.opens) != 3 || f.opens[1].Sub(began) < 300*time.Millisecond {
		t.Errorf("%d opens, the unanswered one given up %s after Consume began", len(f.opens), f.opens[1].Sub(began))
	}
}

// TestConsumeReactions writes reactions with their acknowledgement and
// maps the answers.
func TestConsumeReactions(t *testing.T) {
	f := newFakeService(t)
	var calls atomic.Int32
	f.write = func(b writeRequest) (int, string) {
		switch b.Acknowledge.Deliveries[0] {
		case "moved":
			return http.StatusConflict, "state conflict: delivery is no longer held"
		case "refused":
			return http.StatusConflict, "state conflict: precondition failed"
		case "flaky":
			if calls.Add(1) == 1 {
				return http.StatusServiceUnavailable, "service unavailable: too many connections"
			}
		}
		return http.StatusOK, "[]"
	}
	stats := &Stats{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- f.client().ConsumeReactions(ctx, "billing", "w1", func(ctx context.Context, d Delivery) (Reaction, error) {
			if d.Token == "plain" {
				return Reaction{}, nil
			}
			return Reaction{Events: []EventCandidate{{Source: "https://x", Subject: "/invoices" + d.Event.Subject, Type: "io.example.invoiced", Data: map[string]string{"for": d.Event.ID}}},
				Preconditions: []Precondition{IsSubjectPristine("/invoices" + d.Event.Subject)}}, nil
		}, ConsumeOptions{Stats: stats, ReconnectMin: time.Millisecond, ReconnectMax: 2 * time.Millisecond})
	}()
	s := f.stream()
	s.send(assignmentLine(0))
	for i, tok := range []string{"new", "moved", "plain", "refused", "flaky"} {
		s.send(deliveryLine(tok, 0, 1, i, fmt.Sprintf("/%d", i)))
	}
	waitFor(t, "every delivery settled", func() bool {
		return stats.Reactions.Load() == 2 && stats.Acknowledged.Load() == 3 && stats.Stale.Load() == 1 && stats.Retried.Load() == 1
	})
	cancel()
	<-done
	writes := f.writes()
	if len(writes) != 5 { // new, moved, refused, flaky twice
		t.Fatalf("%d writes", len(writes))
	}
	w := writes[0]
	if w.Acknowledge.Subscription != "billing" || len(w.Events) != 1 || w.Events[0]["subject"] != "/invoices/0" ||
		w.Events[0]["data"].(map[string]any)["for"] != "0" || w.Preconditions[0].Type != "isSubjectPristine" {
		t.Errorf("the reaction's write %+v", w)
	}
	acks, _ := f.settled("acknowledge-deliveries")
	if len(acks) != 1 || acks[0][0] != "plain" {
		t.Errorf("acknowledged %v, want the reaction without events", acks)
	}
	retries, _ := f.settled("retry-deliveries")
	if len(retries) != 1 || retries[0][0] != "refused" {
		t.Errorf("retried %v, want the refused reaction", retries)
	}
}

func TestBackoff(t *testing.T) {
	o := ConsumeOptions{ReconnectMin: 100 * time.Millisecond, ReconnectMax: time.Second}.withDefaults()
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			if d := o.backoff(n); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %s, want %s to %s", n, d, want/2, want)
			}
		}
	}
	if d := o.backoff(1 << 20); d > time.Second {
		t.Errorf("backoff of many failures %s", d)
	}
}

func TestDefaultRetryDelay(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: time.Minute, 1000: time.Minute} {
		if got := DefaultRetryDelay(attempt); got != want {
			t.Errorf("DefaultRetryDelay(%d) = %s, want %s", attempt, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abcdef", 3, "abc"}, {"aé", 2, "a"}, {"aéb", 3, "aé"}} {
		if got := cut(tc.in, tc.n); got != tc.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestConsumeInProgressAndSettleLater: a handler extends its delivery
// with InProgress while it works, and a handler that returns
// ErrSettleLater leaves its delivery to the application, which settles it
// after the handler returned.
func TestConsumeInProgressAndSettleLater(t *testing.T) {
	f := newFakeService(t)
	stats := &Stats{}
	c := f.client()
	later := make(chan Delivery, 1)
	handler := func(ctx context.Context, d Delivery) error {
		if err := d.InProgress(ctx, 90*time.Second); err != nil {
			return err
		}
		if d.Token == "slow" {
			later <- d
			return ErrSettleLater
		}
		return nil
	}
	r := runConsume(t, c, handler, ConsumeOptions{Stats: stats})
	s := f.stream()
	s.send(assignmentLine(0))
	s.send(deliveryLine("slow", 0, 1, 0, "/s"))
	s.send(deliveryLine("quick", 0, 1, 1, "/s"))
	waitFor(t, "quick acknowledged", func() bool { return stats.Acknowledged.Load() == 1 && stats.SettledLater.Load() == 1 })
	d := <-later
	if res, err := c.Acknowledge(context.Background(), "billing", d.Token); err != nil || res.Settled != 1 {
		t.Fatalf("the application's acknowledgement: %+v %v", res, err)
	}
	_ = r.stop()
	tokens, bodies := f.settled("extend-deliveries")
	if len(tokens) != 2 || tokens[0][0] != "slow" || tokens[1][0] != "quick" || bodies[0].By != "1m30s" {
		t.Errorf("extensions %v %+v", tokens, bodies)
	}
	acks, _ := f.settled("acknowledge-deliveries")
	var acked []string
	for _, a := range acks {
		acked = append(acked, a...)
	}
	if strings.Join(acked, ",") != "quick,slow" {
		t.Errorf("acknowledged %v, want quick by Consume, then slow by the application", acked)
	}
	if err := (Delivery{Token: "x"}).InProgress(context.Background(), 0); err == nil {
		t.Error("InProgress of a delivery Consume did not hand over")
	}
}
