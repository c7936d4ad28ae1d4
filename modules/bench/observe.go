package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	body := []byte(`{"subject":"/","options":{"recursive":true,"fromLatestEvent":{"subject":"` + marker + `","type":"io.eventstore.bench.started","ifEventIsMissing":"wait-for-event"}}}`)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type receipt struct {
		id uint64
		at time.Time
	}
	receipts := make([][]receipt, observers)
	var wg sync.WaitGroup
	opened := make(chan error, observers)
	last := make(chan uint64, 1) // the last id written, once known
	for i := 0; i < observers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			client := newClient(1)
			client.Timeout = 0 // the stream lasts the scenario, which ctx ends; a minute cut the observers of longer runs
			resp, err := watch.post(ctx, client, "/api/v1/observe-events", body)
			if err != nil || resp.StatusCode != http.StatusOK {
				opened <- fmt.Errorf("open observer: %v", err)
				return
			}
			opened <- nil
			defer resp.Body.Close()
			r := bufio.NewReaderSize(resp.Body, 64<<10)
			var until uint64 = 1<<64 - 1
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				at := time.Now()
				id, ok := eventID(line)
				if !ok {
					continue // heartbeat
				}
				receipts[i] = append(receipts[i], receipt{id: id, at: at})
				select {
				case until = <-last:
					last <- until
				default:
				}
				if id >= until {
					return
				}
			}
		}(i)
	}
	for i := 0; i < observers; i++ {
		if err := <-opened; err != nil {
			return ObserveResult{}, err
		}
	}
	if ready != nil {
		ready()
	}

	// Up to 64 writes in flight, so that the rate holds where an
	// acknowledgement takes longer than a few intervals (a commit to
	// PostgreSQL); connections open only as needed.
	client := newClient(64)
	defer client.CloseIdleConnections()
	var acksMu sync.Mutex
	acks := map[uint64]time.Time{}
	write := func(subject, eventType string) (uint64, error) {
		payload := []byte(`{"events":[{"source":"https://bench.eventstore.example","subject":"` + subject + `","type":"` + eventType + `","data":{"n":1}}]}`)
		resp, err := writer.post(ctx, client, "/api/v1/write-events", payload)
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
		acksMu.Lock()
		acks[id] = at
		acksMu.Unlock()
		return id, nil
	}
	first, err := write(marker, "io.eventstore.bench.started")
	if err != nil {
		return ObserveResult{}, err
	}
	// One writer paced by the clock; each write goes out on time without
	// waiting for the previous acknowledgement, so the rate holds.
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
			id, err := write("/bench/observe/live", "io.eventstore.bench.recorded")
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
		return ObserveResult{}, err
	default:
	}
	last <- lastID
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cancel()
		<-done
	}

	res := ObserveResult{Observers: observers, Across: watch.URL != writer.URL, Written: int(lastID - first + 1), Elapsed: elapsed}
	for _, rs := range receipts {
		res.Delivered += int64(len(rs))
		res.Missing += int64(res.Written) - int64(len(rs))
		for _, r := range rs {
			if ack, ok := acks[r.id]; ok {
				res.Latencies = append(res.Latencies, max(0, r.at.Sub(ack)))
			}
		}
	}
	slices.Sort(res.Latencies)
	return res, nil
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
