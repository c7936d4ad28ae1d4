package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// server is the instance the workers talk to, replaced at each restart.
type server struct {
	mu  sync.Mutex
	url string
}

func (s *server) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

func (s *server) set(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.url = url
}

// post sends body to path on the current server; errors are the caller's
// to shrug off (the server may be down).
func (s *server) post(ctx context.Context, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", s.get()+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// TestExactlyOnceReactions has three competing workers answer each of
// 1,000 orders with one invoice, written together with the acknowledgement
// of the order's delivery and without any precondition, while workers drop
// their streams at random and the server is killed with SIGKILL and
// restarted twice: at the end there is exactly one invoice per order.
func TestExactlyOnceReactions(t *testing.T) {
	const orders = 1000
	dir := t.TempDir()
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	srv := &server{url: inst.URL("http")}
	prepareInvoicing(t, inst, orders)
	rs := startReactors([]*server{srv, srv, srv}, 7)
	defer rs.stop()
	for kill := range 2 {
		killInTheMiddle(t, kill, rs, orders)
		inst.Signal(syscall.SIGKILL)
		inst.Wait(10 * time.Second)
		inst = harness.Start(t, bin, args...)
		srv.set(inst.URL("http"))
	}
	waitSettled(t, inst, "invoicing")
	rs.stop()
	checkOneInvoiceEach(t, inst, orders, rs)
}

// killInTheMiddle waits until the reactors wrote (kill+1)/4 of the orders'
// invoices, so that kill number kill (0 or 1) comes in the middle of the
// work, and fails the test when they wrote every one before it could.
func killInTheMiddle(t *testing.T, kill int, rs *reactors, orders int) {
	t.Helper()
	waitUntil(t, 60*time.Second, func() bool { return rs.written.Load() >= int64(orders*(kill+1)/4) })
	if n := rs.written.Load(); n >= int64(orders) {
		t.Fatalf("kill %d: all %d invoices were written before it: it would test no kill in the middle of the work", kill, n)
	}
}

// prepareInvoicing writes orders events /orders/<n> and creates the
// subscription "invoicing" of their subtree: eight partitions, 20 in flight
// each, a 2 s acknowledge timeout.
func prepareInvoicing(t *testing.T, target harness.Target, orders int) {
	t.Helper()
	var body strings.Builder
	for i := range orders {
		if i%250 == 0 {
			body.Reset()
			body.WriteString(`{"events":[`)
		} else {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"source":"https://shop","subject":"/orders/%d","type":"io.example.order-placed","data":{"n":%d}}`, i, i)
		if i%250 == 249 || i == orders-1 {
			body.WriteString("]}")
			mustWrite(t, target, body.String())
		}
	}
	if r := target.Do("POST", "/api/v1/create-subscription", harness.Token,
		`{"subscription":"invoicing","subject":"/orders","options":{"recursive":true,"partitions":8,"maxInFlight":20,"acknowledgeTimeout":"2s"}}`); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
}

// reactors are workers that answer the orders of "invoicing", worker i on
// servers[i], reconnecting whenever their streams end.
type reactors struct {
	written, refused atomic.Int64
	cancel           context.CancelFunc
	wg               sync.WaitGroup
}

// startReactors starts a worker for each of servers, their random choices
// seeded with seed.
func startReactors(servers []*server, seed uint64) *reactors {
	ctx, cancel := context.WithCancel(context.Background())
	rs := &reactors{cancel: cancel}
	for w, srv := range servers {
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), seed))
			for ctx.Err() == nil {
				work(ctx, srv, fmt.Sprintf("worker-%d", w), r, &rs.written, &rs.refused)
				time.Sleep(50 * time.Millisecond) // reconnect
			}
		}()
	}
	return rs
}

// stop ends the workers and waits for them.
func (rs *reactors) stop() {
	rs.cancel()
	rs.wg.Wait()
}

// waitSettled waits until the subscription name has no lag and nothing in
// flight, and fails if it parked events.
func waitSettled(t *testing.T, target harness.Target, name string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var info struct {
			Lag      int `json:"lag"`
			InFlight int `json:"inFlight"`
			Parked   int `json:"parked"`
		}
		r := target.Do("POST", "/api/v1/read-subscription", harness.Token, fmt.Sprintf(`{"subscription":%q}`, name))
		if err := json.Unmarshal(r.Body, &info); err != nil {
			t.Fatalf("read-subscription: %v %s", err, r.Body)
		}
		if info.Lag == 0 && info.InFlight == 0 {
			if info.Parked != 0 {
				t.Fatalf("%d orders parked", info.Parked)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done: %+v", info)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkOneInvoiceEach fails unless each of the orders has exactly one
// invoice.
func checkOneInvoiceEach(t *testing.T, target harness.Target, orders int, rs *reactors) {
	t.Helper()
	invoices := map[string]int{}
	for _, l := range stream(t, target, "/api/v1/read-events", `{"subject":"/invoices","options":{"recursive":true}}`) {
		var e struct {
			Subject string `json:"subject"`
		}
		if err := json.Unmarshal(l.Payload, &e); err != nil {
			t.Fatal(err)
		}
		invoices[e.Subject]++
	}
	for i := range orders {
		if n := invoices[fmt.Sprintf("/invoices/%d", i)]; n != 1 {
			t.Fatalf("order %d has %d invoices (written %d, refused as stale %d)", i, n, rs.written.Load(), rs.refused.Load())
		}
	}
	t.Logf("%d invoices written, %d reactions refused as stale", rs.written.Load(), rs.refused.Load())
}

// work consumes as name until the stream ends or the worker drops it, and
// answers each delivery with an invoice written together with its
// acknowledgement.
func work(ctx context.Context, srv *server, name string, r *rand.Rand, written, refused *atomic.Int64) {
	drop := 20 + r.IntN(60) // deliveries before this worker drops its stream
	deliveries(ctx, srv, "invoicing", name, func(d delivery, e streamedEvent) bool {
		invoice := fmt.Sprintf(`{"events":[{"source":"https://billing","subject":"/invoices/%s","type":"io.example.invoiced","data":{}}],"acknowledge":{"subscription":"invoicing","deliveries":[%q]}}`,
			strings.TrimPrefix(e.Subject, "/orders/"), d.Delivery)
		status, _, err := srv.post(ctx, "/api/v1/write-events", invoice)
		switch {
		case err != nil:
			return false // the server went away; the delivery comes again if nothing was committed
		case status == http.StatusOK:
			written.Add(1)
		case status == http.StatusConflict:
			refused.Add(1) // the partition moved: another worker does it
		}
		drop--
		return drop > 0
	})
}

// streamedEvent is what the tests read of a delivered event.
type streamedEvent struct {
	ID      string `json:"id"`
	Subject string `json:"subject"`
}

// deliveries consumes subscription as name on the current server and calls
// fn with each delivery until fn returns false or the stream ends.
func deliveries(ctx context.Context, srv *server, subscription, name string, fn func(d delivery, e streamedEvent) bool) {
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(streamCtx, "POST", srv.get()+"/api/v1/consume-subscription",
		strings.NewReader(fmt.Sprintf(`{"subscription":%q,"consumer":%q}`, subscription, name)))
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l ndjsonLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "delivery" {
			continue
		}
		var d delivery
		var e streamedEvent
		if json.Unmarshal(l.Payload, &d) != nil || json.Unmarshal(d.Event, &e) != nil {
			continue
		}
		if !fn(d, e) {
			return
		}
	}
}

// TestSubscriptionsSurviveKills kills the server with SIGKILL ten times
// while writers write and two consumers acknowledge: every event is settled
// at least once, and none is delivered again after an acknowledgement of
// it returned 200. A delivery of the acknowledged token's epoch may still
// arrive after the 200: sent again on its timeout before the
// acknowledgement, it was on its way; one of a later epoch (a move, a
// restart) was sent after it, and would break the promise.
func TestSubscriptionsSurviveKills(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	srv := &server{url: inst.URL("http")}
	target := &restarted{inst: inst}
	ackUnderKills(t, target, srv, []*server{srv, srv}, []*server{srv, srv}, 10, func(int) {
		time.Sleep(200 * time.Millisecond)
		target.inst.Signal(syscall.SIGKILL)
		target.inst.Wait(10 * time.Second)
		target.inst = harness.Start(t, bin, args...)
		srv.set(target.inst.URL("http"))
	})
}

// restarted is an instance that a test replaces as it kills it.
type restarted struct{ inst *harness.Instance }

func (r *restarted) Do(method, path, token, body string, header ...string) harness.Response {
	return r.inst.Do(method, path, token, body, header...)
}
func (r *restarted) URL(scheme string) string   { return r.inst.URL(scheme) }
func (r *restarted) Nodes() []*harness.Instance { return []*harness.Instance{r.inst} }

// ackUnderKills creates the subscription "audit" of the whole log (four
// partitions, 1 s acknowledge timeout) on target; a writer writes through
// writeTo while consumer i consumes on consumeOn[i] and acknowledges each
// delivery at once through ackOn[i], and kill runs kills times: every event
// written ends settled, and none is delivered again with a later epoch
// after an acknowledgement of it returned 200. (One of the same epoch may
// still arrive: sent again on its timeout before the acknowledgement, it
// was on its way; one of a later epoch (a move, a restart) was sent after
// it, and would break the promise.)
func ackUnderKills(t *testing.T, target harness.Target, writeTo *server, consumeOn, ackOn []*server, kills int, kill func(round int)) {
	t.Helper()
	if r := target.Do("POST", "/api/v1/create-subscription", harness.Token,
		`{"subscription":"audit","subject":"/","options":{"recursive":true,"partitions":4,"acknowledgeTimeout":"1s"}}`); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	writing, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	var (
		mu        sync.Mutex
		acked     = map[string]uint64{} // event id → epoch of the token whose acknowledgement returned 200
		violation string
		written   atomic.Int64
		wg        sync.WaitGroup
		writer    = make(chan struct{})
	)
	go func() { // the writer
		defer close(writer)
		for i := 0; writing.Err() == nil; i++ {
			body := fmt.Sprintf(`{"events":[{"source":"https://x","subject":"/s/%d","type":"io.example.x","data":{}}]}`, i%16)
			if status, _, err := writeTo.post(writing, "/api/v1/write-events", body); err == nil && status == 200 {
				written.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for w := range consumeOn {
		wg.Add(1)
		go func() { // a consumer
			defer wg.Done()
			for ctx.Err() == nil {
				consumeAndAck(ctx, consumeOn[w], ackOn[w], fmt.Sprintf("c%d", w), func(id string, tok subscriptions.Token) {
					mu.Lock()
					defer mu.Unlock()
					if epoch, ok := acked[id]; ok && tok.Epoch > epoch && violation == "" {
						violation = fmt.Sprintf("event %s delivered again (epoch %d) after an acknowledgement of epoch %d returned 200", id, tok.Epoch, epoch)
					}
				}, func(id string, tok subscriptions.Token) {
					mu.Lock()
					defer mu.Unlock()
					acked[id] = tok.Epoch
				})
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	for round := range kills {
		kill(round)
	}
	// Writes go on after the kills; then the writer stops, and everything
	// written must end settled (a moment without lag and in flight while
	// the writer goes on may never come on a loaded machine).
	afterKills := written.Load()
	waitUntil(t, 30*time.Second, func() bool { return written.Load() > afterKills+10 })
	stopWriting()
	<-writer
	deadline := time.Now().Add(90 * time.Second)
	for {
		var info struct {
			Lag      int `json:"lag"`
			InFlight int `json:"inFlight"`
		}
		r := target.Do("POST", "/api/v1/read-subscription", harness.Token, `{"subscription":"audit"}`)
		if err := json.Unmarshal(r.Body, &info); err != nil {
			t.Fatal(err)
		}
		if info.Lag == 0 && info.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %+v", info)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if violation != "" {
		t.Fatal(violation)
	}
	t.Logf("%d events written, %d acknowledged with a 200, through %d kills", written.Load(), len(acked), kills)
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}
}

// consumeAndAck consumes as name on srv until the stream ends,
// acknowledging each delivery at once through ackTo; delivered learns each event id received, acked each
// one whose acknowledgement returned 200 with nothing stale.
func consumeAndAck(ctx context.Context, srv, ackTo *server, name string, delivered, acked func(id string, tok subscriptions.Token)) {
	deliveries(ctx, srv, "audit", name, func(d delivery, e streamedEvent) bool {
		tok, err := subscriptions.ParseToken(d.Delivery)
		if err != nil {
			return false
		}
		delivered(e.ID, tok)
		status, body, err := ackTo.post(ctx, "/api/v1/acknowledge-deliveries", `{"subscription":"audit","deliveries":["`+d.Delivery+`"]}`)
		if err != nil {
			return false
		}
		if status == 200 && strings.Contains(string(body), `"acknowledged":1`) {
			acked(e.ID, tok)
		}
		return true
	})
}
