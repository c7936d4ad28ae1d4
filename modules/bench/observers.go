package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// receipt is an observer's receipt of one event.
type receipt struct {
	id uint64
	at time.Time
}

// observerSet is the observers of one observe scenario, each on a stream of
// its own that it reads until it has received the last event written.
type observerSet struct {
	receipts [][]receipt // by observer
	wg       sync.WaitGroup
	opened   chan error  // one report per observer: nil once its stream is open
	last     chan uint64 // the last id written, once known
}

// startObservers starts n observers on "/" recursive on watch, each from
// the latest event of marker on (waiting for it).
func startObservers(ctx context.Context, watch Target, marker string, n int) *observerSet {
	body := []byte(`{"subject":"/","options":{"recursive":true,"fromLatestEvent":{"subject":"` + marker + `","type":"io.eventstore.bench.started","ifEventIsMissing":"wait-for-event"}}}`)
	o := &observerSet{receipts: make([][]receipt, n), opened: make(chan error, n), last: make(chan uint64, 1)}
	for i := 0; i < n; i++ {
		o.wg.Add(1)
		go o.observe(ctx, watch, body, i)
	}
	return o
}

// observe opens observer i's stream, reports on opened whether it opened,
// and records the events it receives.
func (o *observerSet) observe(ctx context.Context, watch Target, body []byte, i int) {
	defer o.wg.Done()
	client := newClient(1)
	client.Timeout = 0 // the stream lasts the scenario, which ctx ends; a minute cut the observers of longer runs
	resp, err := watch.post(ctx, client, "/api/v1/observe-events", body)
	if err != nil {
		o.opened <- fmt.Errorf("open observer: %w", err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		o.opened <- fmt.Errorf("open observer: %s", resp.Status)
		return
	}
	o.opened <- nil
	defer resp.Body.Close()
	o.receive(i, resp.Body)
}

// receive records observer i's receipt of each event on stream, skipping
// heartbeats, until it has received the last id written or the stream
// ends.
func (o *observerSet) receive(i int, stream io.Reader) {
	r := bufio.NewReaderSize(stream, 64<<10)
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
		o.receipts[i] = append(o.receipts[i], receipt{id: id, at: at})
		select {
		case until = <-o.last:
			o.last <- until
		default:
		}
		if id >= until {
			return
		}
	}
}

// awaitOpen waits for every observer's report of its stream and returns
// the first failure in the order they came.
func (o *observerSet) awaitOpen() error {
	for range o.receipts {
		if err := <-o.opened; err != nil {
			return err
		}
	}
	return nil
}

// finish tells the observers the last id written and waits for them to
// receive it; after 30 seconds, cancel ends the streams still open.
func (o *observerSet) finish(lastID uint64, cancel context.CancelFunc) {
	o.last <- lastID
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cancel()
		<-done
	}
}

// tally adds the observers' receipts to res, whose Written is set: the
// deliveries, the events each observer missed, and the sorted latencies
// from a write's acknowledgement (in acks) to each receipt of its event.
func (o *observerSet) tally(res *ObserveResult, acks map[uint64]time.Time) {
	for _, rs := range o.receipts {
		res.Delivered += int64(len(rs))
		res.Missing += int64(res.Written) - int64(len(rs))
		for _, r := range rs {
			if ack, ok := acks[r.id]; ok {
				res.Latencies = append(res.Latencies, max(0, r.at.Sub(ack)))
			}
		}
	}
	slices.Sort(res.Latencies)
}
