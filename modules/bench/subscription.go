package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ackBatch is the number of tokens a consumer of the subscription
// scenario acknowledges per request.
const ackBatch = 1000

// runSubscription runs the subscription scenario: a backlog of
// opts.SubscriptionEvents events, held by a subscription with a full
// window (the server's memory only), then drained by one consumer of one partition
// and by 8 consumers of 16 partitions, each acknowledging in batches of
// 1,000 (the latencies are those of the acknowledgements, beside the
// deliveries going on); then acknowledgements of 1,000 alone: one consumer
// whose window of 1,000 is full when it acknowledges them (200 of them, or
// the backlog's); then 10 subscriptions following a write load of
// opts.ObserveRate events/s live (the latencies are from a write's start
// to its delivery).
func (r *runner) runSubscription() error {
	n := r.opts.SubscriptionEvents
	prefix := fmt.Sprintf("/bench/subscription/%d", time.Now().UnixNano())
	if err := r.target.FillMixed(r.ctx, prefix+"/backlog", n); err != nil {
		return err
	}
	if err := r.holdBacklog(prefix + "/backlog"); err != nil {
		return err
	}
	// The drains' windows: 10,000 deliveries in flight per consumer, room
	// for ten acknowledgements of 1,000 on their way.
	for _, shape := range []struct {
		scenario                              string
		consumers, partitions, window, events int
	}{
		{"subscription-drain-1", 1, 1, 10_000, n},
		{"subscription-drain-16", 8, 16, 5_000, n},
		{"subscription-ack", 1, 1, ackBatch, min(n, 200*ackBatch)},
	} {
		name := fmt.Sprintf("%s-%d", shape.scenario, time.Now().UnixNano())
		create := fmt.Sprintf(`{"subscription":%q,"subject":%q,"options":{"recursive":true,"partitions":%d,"maxInFlight":%d}}`, name, prefix+"/backlog", shape.partitions, shape.window)
		if err := r.target.call(r.ctx, newClient(1), "/api/v1/create-subscription", []byte(create), nil); err != nil {
			return err
		}
		idle := r.begin(r.server)
		label := fmt.Sprintf("drain %d, %d consumer/%d partition", shape.events, shape.consumers, shape.partitions)
		if shape.scenario == "subscription-ack" {
			label = fmt.Sprintf("acknowledge %d x%d, alone", ackBatch, shape.events/ackBatch)
		}
		probing, stopProbing := context.WithCancel(r.ctx)
		probed := make(chan probe, 1)
		go func() { probed <- r.target.probeReads(probing, name) }()
		res := r.target.Drain(r.ctx, label, name, shape.consumers, shape.events)
		stopProbing()
		reads := <-probed
		rec := r.record(shape.scenario, res, r.end(r.server, idle))
		fmt.Fprintf(r.out, "%-28s meanwhile %s\n", "", reads)
		if rec.PeakRSSBytes > 0 {
			fmt.Fprintf(r.out, "%-28s server RSS %+.1f MiB at most, against %.1f MiB before; acknowledge %d tokens p50 %.2f ms, p99 %.2f ms\n", "",
				float64(rec.PeakRSSBytes-idle.RSS)/(1<<20), float64(idle.RSS)/(1<<20), ackBatch, rec.LatencyP50Ms, rec.LatencyP99Ms)
		}
		if res.Errors > 0 {
			return fmt.Errorf("%s: %d failed requests", res.Name, res.Errors)
		}
	}
	const live = 10
	var names []string
	for i := range live {
		name := fmt.Sprintf("live%d-%d", i, time.Now().UnixNano())
		create := fmt.Sprintf(`{"subscription":%q,"subject":%q,"options":{"recursive":true,"start":"end"}}`, name, prefix+"/live")
		if err := r.target.call(r.ctx, newClient(1), "/api/v1/create-subscription", []byte(create), nil); err != nil {
			return err
		}
		names = append(names, name)
	}
	r.measure("subscription-live", r.server, func() Result {
		return r.target.Follow(r.ctx, fmt.Sprintf("live x%d at %d events/s", live, r.opts.ObserveRate), names, prefix+"/live", r.opts.ObserveRate, r.opts.Duration)
	})
	return nil
}

// holdBacklog measures what a subscription with the whole backlog ahead
// of it costs a server bench started: its RSS idle, then with the
// subscription created and a consumer holding a full window of 10,000
// deliveries unacknowledged (nothing else goes on meanwhile).
func (r *runner) holdBacklog(subject string) error {
	if r.server == nil {
		return nil
	}
	name := fmt.Sprintf("hold-%d", time.Now().UnixNano())
	create := fmt.Sprintf(`{"subscription":%q,"subject":%q,"options":{"recursive":true,"maxInFlight":10000}}`, name, subject)
	idle := r.begin(r.server)
	if err := r.target.call(r.ctx, newClient(1), "/api/v1/create-subscription", []byte(create), nil); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var received atomic.Int64
	full := make(chan struct{})
	go func() {
		_ = r.target.consume(ctx, name, "holder", func([]byte) {
			if received.Add(1) == 10_000 {
				close(full)
			}
		}, func([]string) {}) // never acknowledged
	}()
	select {
	case <-full:
	case <-time.After(time.Minute):
		return fmt.Errorf("hold: %d of 10,000 deliveries in a minute", received.Load())
	}
	time.Sleep(time.Second) // the stream's lines written, nothing else to do
	held, err := r.server.Usage()
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "%-28s server RSS %.1f MiB idle, %.1f MiB with the backlog ahead of a subscription and 10,000 deliveries held (%+.1f MiB, peak %+.1f MiB)\n",
		"hold the backlog", float64(idle.RSS)/(1<<20), float64(held.RSS)/(1<<20), float64(held.RSS-idle.RSS)/(1<<20), float64(held.PeakRSS-idle.RSS)/(1<<20))
	cancel()
	return r.target.call(r.ctx, newClient(1), "/api/v1/delete-subscription", []byte(fmt.Sprintf(`{"subscription":%q}`, name)), nil)
}

// Drain consumes the subscription name with consumers consumers until
// events deliveries were acknowledged, each consumer acknowledging the
// tokens it received in batches of ackBatch (a batch goes when full or
// 5 ms old). The result counts the acknowledgements as requests,
// with their latencies.
func (t Target) Drain(ctx context.Context, label, name string, consumers, events int) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		acked     atomic.Int64
		failed    failures
		mu        sync.Mutex
		latencies []time.Duration
		done      = make(chan struct{})
		once      sync.Once
	)
	ack := func(client *http.Client, tokens []string) {
		start := time.Now()
		if err := t.call(ctx, client, "/api/v1/acknowledge-deliveries", ackBody(name, tokens), nil); err != nil {
			if ctx.Err() == nil {
				failed.addErr("/api/v1/acknowledge-deliveries", err)
			}
			return
		}
		took := time.Since(start)
		mu.Lock()
		latencies = append(latencies, took)
		mu.Unlock()
		if acked.Add(int64(len(tokens))) >= int64(events) {
			once.Do(func() { close(done) })
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := newClient(1)
			if err := t.consume(ctx, name, fmt.Sprintf("c%d", c), nil, func(tokens []string) { ack(client, tokens) }); err != nil && ctx.Err() == nil {
				failed.addErr("/api/v1/consume-subscription", err)
				once.Do(func() { close(done) })
			}
		}()
	}
	<-done
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	slices.Sort(latencies)
	n, kinds := failed.count()
	return Result{Name: label, Requests: int64(len(latencies)), Events: acked.Load(), Errors: n, Failures: kinds, Elapsed: elapsed, Latencies: latencies}
}

// consume reads the stream of consumer of subscription name until ctx
// ends, showing each delivery line to seen (unless nil) as it arrives and
// handing the tokens to settle in batches of up to ackBatch, in order, one
// batch at a time while the next gathers; a batch goes when it is full or
// 5 ms old. The lines are read and parsed where they arrive, with no hop
// between goroutines per line: the drain measures the server, and on a
// machine of two cores what the client spends per line is taken from it.
func (t Target) consume(ctx context.Context, name, consumer string, seen func(line []byte), settle func(tokens []string)) error {
	client := newClient(1)
	client.Timeout = 0
	resp, err := t.post(ctx, client, "/api/v1/consume-subscription", []byte(fmt.Sprintf(`{"subscription":%q,"consumer":%q}`, name, consumer)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("consume-subscription answered %d", resp.StatusCode)
	}
	batches := make(chan []string, 4)
	var settled sync.WaitGroup
	settled.Add(1)
	go func() {
		defer settled.Done()
		for b := range batches {
			settle(b)
		}
	}()
	g := &gatherer{out: batches}
	defer func() { g.stop(); close(batches); settled.Wait() }()
	unblock := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer unblock()
	in := bufio.NewReaderSize(resp.Body, 1<<20)
	var long []byte // a line longer than the buffer, gathered
	for {
		line, err := in.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, line...)
			continue
		case err != nil:
			return ctx.Err()
		case long != nil:
			line, long = append(long, line...), nil
		}
		token, ok := deliveryToken(line)
		if !ok {
			continue
		}
		if seen != nil {
			seen(line)
		}
		g.add(token)
	}
}

// gatherer gathers tokens into batches for out: a batch goes when it has
// ackBatch tokens, or 5 ms after its first.
type gatherer struct {
	mu      sync.Mutex
	pending []string
	batch   uint64 // the number of the batch gathering, for its timer
	stopped bool
	out     chan<- []string
}

// add adds token to the batch gathering.
func (g *gatherer) add(token string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = append(g.pending, token)
	switch len(g.pending) {
	case 1:
		batch := g.batch
		time.AfterFunc(5*time.Millisecond, func() { g.timeout(batch) })
	case ackBatch:
		g.send()
	}
}

// timeout sends batch if it is still gathering.
func (g *gatherer) timeout(batch uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.batch == batch && !g.stopped && len(g.pending) > 0 {
		g.send()
	}
}

// send sends the batch gathering. The caller holds g.mu.
func (g *gatherer) send() {
	g.out <- g.pending
	g.pending = nil
	g.batch++
}

// stop has no batch sent any more: out may be closed then.
func (g *gatherer) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
}

// ackBody is the body of acknowledge-deliveries of tokens of subscription
// name.
func ackBody(name string, tokens []string) []byte {
	body, _ := json.Marshal(struct {
		Subscription string   `json:"subscription"`
		Deliveries   []string `json:"deliveries"`
	}{name, tokens})
	return body
}

// deliveryToken returns the token of a delivery line.
func deliveryToken(line []byte) (string, bool) {
	const key = `{"type":"delivery","payload":{"delivery":"`
	if !bytes.HasPrefix(line, []byte(key)) {
		return "", false
	}
	rest := line[len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// Follow writes one event per request on subject at rate events per
// second for duration while one consumer of each subscription of names
// receives and acknowledges them; the latencies are from each write's
// start to each delivery of its event (its data carries the start).
func (t Target) Follow(ctx context.Context, label string, names []string, subject string, rate int, duration time.Duration) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failed    failures
		consumers sync.WaitGroup
	)
	base := time.Now()
	for _, name := range names {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			acks := newClient(1)
			seen := func(line []byte) {
				at := time.Since(base)
				i := bytes.Index(line, []byte(`"sent":`))
				if i < 0 {
					return
				}
				digits := line[i+len(`"sent":`):]
				end := 0
				for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
					end++
				}
				if sent, err := strconv.ParseInt(string(digits[:end]), 10, 64); err == nil {
					mu.Lock()
					latencies = append(latencies, at-time.Duration(sent))
					mu.Unlock()
				}
			}
			settle := func(tokens []string) {
				if err := t.call(ctx, acks, "/api/v1/acknowledge-deliveries", ackBody(name, tokens), nil); err != nil && ctx.Err() == nil {
					failed.addErr("/api/v1/acknowledge-deliveries", err)
				}
			}
			if err := t.consume(ctx, name, "live", seen, settle); err != nil && ctx.Err() == nil {
				failed.addErr("/api/v1/consume-subscription", err)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the consumers connect
	writes := newClient(64)
	defer writes.CloseIdleConnections()
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	var written sync.WaitGroup
	var count atomic.Int64
	for i := 0; time.Since(start) < duration; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		written.Add(1)
		go func() {
			defer written.Done()
			sent := time.Since(base)
			body := fmt.Sprintf(`{"events":[{"source":"https://bench.eventstore.example","subject":%q,"type":%q,"data":{"sent":%d}}]}`, subject, EventType, sent)
			if err := t.call(ctx, writes, "/api/v1/write-events", []byte(body), nil); err != nil {
				failed.addErr("/api/v1/write-events", err)
				return
			}
			count.Add(1)
		}()
	}
	written.Wait()
	elapsed := time.Since(start)
	want := int(count.Load()) * len(names)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := len(latencies)
		mu.Unlock()
		if got >= want {
			break
		}
	}
	cancel()
	consumers.Wait()
	slices.Sort(latencies)
	if missing := want - len(latencies); missing > 0 {
		for range missing {
			failed.add("deliveries missing 10 s after the last write")
		}
	}
	n, kinds := failed.count()
	return Result{Name: label, Requests: count.Load(), Events: int64(len(latencies)), Errors: n, Failures: kinds, Elapsed: elapsed, Latencies: latencies}
}
