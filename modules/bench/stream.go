package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Read reads subject rounds times with read-events and returns the result;
// every round is one request, its latency the time to the last line. The
// server's heap is sampled every 10 ms meanwhile.
func (t Target) Read(ctx context.Context, name, subject string, rounds int) Result {
	return t.stream(ctx, name, "/api/v1/read-events", []byte(fmt.Sprintf(`{"subject":%q}`, subject)), rounds)
}

// Query runs an EventQL query rounds times and counts its lines as events.
func (t Target) Query(ctx context.Context, name, query string, rounds int) Result {
	body, _ := json.Marshal(map[string]string{"query": query})
	return t.stream(ctx, name, "/api/v1/run-eventql-query", body, rounds)
}

// Count returns the number of events in the store, by EventQL.
func (t Target) Count(ctx context.Context) (int64, error) {
	body, _ := json.Marshal(map[string]string{"query": "FROM e IN events PROJECT INTO COUNT()"})
	resp, err := t.post(ctx, newClient(1), "/api/v1/run-eventql-query", body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var line struct {
			Type    string
			Payload json.RawMessage
		}
		if err := dec.Decode(&line); err != nil || line.Type == "error" {
			return 0, fmt.Errorf("count: status %d, %v %s", resp.StatusCode, err, line.Payload)
		}
		if line.Type == "row" { // a large store takes heartbeats first
			var n int64
			err := json.Unmarshal(line.Payload, &n)
			return n, err
		}
	}
}

// stream posts body to an NDJSON endpoint rounds times, one request after
// the other, counting the lines it answers with as events and sampling the
// server's Go heap meanwhile.
func (t Target) stream(ctx context.Context, name, path string, body []byte, rounds int) Result {
	t = t.Node(0) // the node whose heap is sampled
	client, sampler := newClient(1), newClient(1)
	defer client.CloseIdleConnections()
	defer sampler.CloseIdleConnections()
	res := Result{Name: name}
	res.HeapBefore, _ = t.heapInUse(sampler)
	sampling := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var peak int64
		ticker := time.NewTicker(10 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-sampling:
				sampled <- peak
				return
			case <-ticker.C:
				if h, err := t.heapInUse(sampler); err == nil && h > peak {
					peak = h
				}
			}
		}
	}()

	buf := make([]byte, 256<<10)
	start := time.Now()
	for i := 0; i < rounds; i++ {
		begin := time.Now()
		resp, err := t.post(ctx, client, path, body)
		if err != nil {
			res.Errors++
			continue
		}
		var lines int64
		for {
			n, err := resp.Body.Read(buf)
			lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		res.Requests++
		res.Events += lines
		res.Latencies = append(res.Latencies, time.Since(begin))
	}
	res.Elapsed = time.Since(start)
	close(sampling)
	res.HeapPeak = <-sampled
	slices.Sort(res.Latencies)
	return res
}

// heapInUse reads go_memstats_heap_inuse_bytes from the service's metrics.
func (t Target) heapInUse(client *http.Client) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, t.URL+"/api/v1/health?format=openmetrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			var f float64
			_, err := fmt.Sscan(value, &f)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("no go_memstats_heap_inuse_bytes in the metrics")
}
