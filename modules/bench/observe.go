package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ObserveResult is the outcome of the observe scenario.
type ObserveResult struct {
	Observers int
	// Across is true when the observers were on another node than the
	// writer.
	Across    bool
	Written   int
	Delivered int64
	Missing   int64
	Elapsed   time.Duration
	// Latencies are the times from a write's acknowledgement (as the writer
	// saw it) to an observer's receipt of the event, over every observer and
	// event, sorted; an observer that received an event before its writer
	// saw the acknowledgement counts 0.
	Latencies []time.Duration
}

// Percentile returns the latency below which p percent of deliveries were.
func (r ObserveResult) Percentile(p float64) time.Duration {
	return Result{Latencies: r.Latencies}.Percentile(p)
}

// String formats the result.
func (r ObserveResult) String() string {
	return fmt.Sprintf("%-28s %10d events  %8d deliveries  missing %d  ack→receipt p50 %8s  p99 %8s  max %8s",
		r.Name(), r.Written, r.Delivered, r.Missing,
		r.Percentile(50).Round(time.Microsecond), r.Percentile(99).Round(time.Microsecond), r.Percentile(100).Round(time.Microsecond))
}

// Name is the label of the result's line.
func (r ObserveResult) Name() string {
	if r.Across {
		return fmt.Sprintf("observe x%d other node", r.Observers)
	}
	return fmt.Sprintf("observe x%d", r.Observers)
}

// Observe opens observers on "/" recursive, writes one event per request at
// rate events per second for duration, and measures how long after the
// acknowledgement each observer receives each event. With several nodes,
// the observers are on the first and the writer on the second. ready,
// unless nil, is called once all observers are open (to take a
// measurement).
func (t Target) Observe(ctx context.Context, observers, rate int, duration time.Duration, ready func()) (ObserveResult, error) {
	watch, writer := t.Node(0), t.Node(1)
	marker := fmt.Sprintf("/bench/observe/%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	obs := startObservers(ctx, watch, marker, observers)
	if err := obs.awaitOpen(); err != nil {
		return ObserveResult{}, err
	}
	if ready != nil {
		ready()
	}
	w := newAckWriter(writer)
	defer w.client.CloseIdleConnections()
	first, err := w.write(ctx, marker, "io.eventstore.bench.started")
	if err != nil {
		return ObserveResult{}, err
	}
	lastID, elapsed, err := w.writeAtRate(ctx, rate, duration)
	if err != nil {
		return ObserveResult{}, err
	}
	obs.finish(lastID, cancel)

	res := ObserveResult{Observers: observers, Across: watch.URL != writer.URL, Written: int(lastID - first + 1), Elapsed: elapsed}
	obs.tally(&res, w.acks)
	return res, nil
}

// ackWriter writes the observe scenario's events to one node and keeps,
// by event id, the time each write's acknowledgement came.
type ackWriter struct {
	node   Target
	client *http.Client
	mu     sync.Mutex
	acks   map[uint64]time.Time
}

// newAckWriter returns the writer to node. Up to 64 writes are in flight,
// so that the rate holds where an acknowledgement takes longer than a few
// intervals (a commit to PostgreSQL); connections open only as needed.
func newAckWriter(node Target) *ackWriter {
	return &ackWriter{node: node, client: newClient(64), acks: map[uint64]time.Time{}}
}

// write writes one event of eventType on subject and returns its id,
// keeping the time its acknowledgement came.
func (w *ackWriter) write(ctx context.Context, subject, eventType string) (uint64, error) {
	payload := []byte(`{"events":[{"source":"https://bench.eventstore.example","subject":"` + subject + `","type":"` + eventType + `","data":{"n":1}}]}`)
	resp, err := w.node.post(ctx, w.client, "/api/v1/write-events", payload)
	if err != nil {
		return 0, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	at := time.Now()
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("write: %d %v", resp.StatusCode, err)
	}
	id, ok := eventID(raw)
	if !ok {
		return 0, fmt.Errorf("write: no id in %s", raw)
	}
	w.mu.Lock()
	w.acks[id] = at
	w.mu.Unlock()
	return id, nil
}

// writeAtRate writes live events at rate per second for duration and
// returns the highest id written and the time the writes took, or the
// first write's error. One writer paced by the clock; each write goes out
// on time without waiting for the previous acknowledgement, so the rate
// holds.
func (w *ackWriter) writeAtRate(ctx context.Context, rate int, duration time.Duration) (uint64, time.Duration, error) {
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	var (
		writes   sync.WaitGroup
		writeErr = make(chan error, 1)
		lastMu   sync.Mutex
		lastID   uint64
	)
	for i := 0; time.Since(start) < duration; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval))) // a late tick is caught up, never dropped
		writes.Add(1)
		go func() {
			defer writes.Done()
			id, err := w.write(ctx, "/bench/observe/live", "io.eventstore.bench.recorded")
			if err != nil {
				select {
				case writeErr <- err:
				default:
				}
				return
			}
			lastMu.Lock()
			lastID = max(lastID, id)
			lastMu.Unlock()
		}()
	}
	writes.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-writeErr:
		return 0, 0, err
	default:
	}
	return lastID, elapsed, nil
}

// eventID finds the first "id":"<n>" in an event line or write response.
func eventID(b []byte) (uint64, bool) {
	i := bytes.Index(b, []byte(`"id":"`))
	if i < 0 {
		return 0, false
	}
	rest := b[i+6:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	return id, err == nil
}
