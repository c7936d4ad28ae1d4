package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// exchange makes one request of a client and says whether it failed.
type exchange func(ctx context.Context) error

// drainTime bounds how long load waits, after its duration, for the
// answers of the requests in flight.
const drainTime = 10 * time.Second

// load runs clients concurrently for duration, each making the requests of
// the exchange newExchange returns for it one after the other, and returns
// the result; every successful request answered within duration counts
// perRequest events. A request in flight at the end runs to its answer,
// uncounted, so that whatever it writes is committed when load returns:
// the reads that prepare the next load see it. The first error is printed
// to stderr; a request cut off by drainTime is not an error. At the end it
// closes client's idle connections, which would otherwise stay open on
// the server.
func load(ctx context.Context, name string, client *http.Client, clients, perRequest int, duration time.Duration, newExchange func(c int) exchange) Result {
	defer client.CloseIdleConnections()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		requests  atomic.Int64
		failures  atomic.Int64
	)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, duration+drainTime)
	defer cancel()
	start := time.Now()
	end := start.Add(duration)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do := newExchange(c)
			own := make([]time.Duration, 0, 4096)
			for parent.Err() == nil && time.Now().Before(end) {
				begin := time.Now()
				err := do(ctx)
				answered := time.Now()
				if err != nil {
					if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
						continue
					}
					if failures.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "bench: %s: %v\n", name, err)
					}
					continue
				}
				if answered.After(end) {
					continue // drained, not counted
				}
				own = append(own, answered.Sub(begin))
				requests.Add(1)
			}
			mu.Lock()
			latencies = append(latencies, own...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := min(time.Since(start), duration)
	slices.Sort(latencies)
	n := requests.Load()
	return Result{Name: name, Requests: n, Events: n * int64(perRequest), Errors: failures.Load(), Elapsed: elapsed, Latencies: latencies}
}

// Write runs clients that each write batch events of eventType per request
// for duration, every client on a subject of its own, and returns the result.
func (t Target) Write(ctx context.Context, name, eventType string, clients, batch int, duration time.Duration) Result {
	client := newClient(clients)
	return load(ctx, name, client, clients, batch, duration, func(c int) exchange {
		body := writeBody(fmt.Sprintf("/bench/writer-%d/client-%d", batch, c), eventType, batch)
		return func(ctx context.Context) error {
			return t.call(ctx, client, "/api/v1/write-events", body, nil)
		}
	})
}

// call posts body to path and reads the answer into into (or discards it
// when into is nil); an answer other than 200 is an error that quotes the
// start of the answer.
func (t Target) call(ctx context.Context, client *http.Client, path string, body []byte, into *bytes.Buffer) error {
	resp, err := t.post(ctx, client, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("%s answered %d: %s", path, resp.StatusCode, bytes.TrimSpace(msg))
	}
	if into == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		_, err = into.ReadFrom(resp.Body)
	}
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", path, err)
	}
	return nil
}
