package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target is the service under load.
type Target struct {
	// URL is the base URL, e.g. http://127.0.0.1:3000.
	URL string
	// Token is the API token.
	Token string
}

// Result is the outcome of one scenario.
type Result struct {
	Name      string
	Requests  int64
	Events    int64
	Errors    int64
	Elapsed   time.Duration
	Latencies []time.Duration // sorted
	// HeapBefore and HeapPeak are the server's Go heap in use before and at
	// most during the scenario (read scenario only), in bytes.
	HeapBefore, HeapPeak int64
}

// EventsPerSecond is the event throughput.
func (r Result) EventsPerSecond() float64 { return float64(r.Events) / r.Elapsed.Seconds() }

// Percentile returns the latency below which p percent of requests finished.
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.Latencies)-1) * p / 100)
	return r.Latencies[i]
}

// String formats the result as one line of figures.
func (r Result) String() string {
	line := fmt.Sprintf("%-28s %10.0f events/s %9.0f requests/s  p50 %8s  p99 %8s  errors %d",
		r.Name, r.EventsPerSecond(), float64(r.Requests)/r.Elapsed.Seconds(),
		r.Percentile(50).Round(time.Microsecond), r.Percentile(99).Round(time.Microsecond), r.Errors)
	if r.HeapPeak > 0 {
		line += fmt.Sprintf("\n%-28s server Go heap in use: %.1f MiB before, at most %.1f MiB while reading", "",
			float64(r.HeapBefore)/(1<<20), float64(r.HeapPeak)/(1<<20))
	}
	return line
}

func newClient(connections int) *http.Client {
	return &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			MaxIdleConns:        connections,
			MaxIdleConnsPerHost: connections,
			MaxConnsPerHost:     connections,
			DisableCompression:  true,
		},
	}
}

// EventType is the type of the events the write scenarios write.
const EventType = "io.eventstore.bench.recorded"

// EventSchema matches the events the write scenarios write.
const EventSchema = `{"type":"object","properties":{"amount":{"type":"integer","minimum":0},"currency":{"type":"string","enum":["EUR","USD"]},` +
	`"customer":{"type":"string","pattern":"^c-[0-9]+$"},"note":{"type":"string","maxLength":200},` +
	`"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},` +
	`"required":["amount","currency","customer","items"],"additionalProperties":false}`

// writeBody returns a write-events body of n events of eventType on subject.
func writeBody(subject, eventType string, n int) []byte {
	return batchBody(n, func(int) (string, string) { return subject, eventType })
}

// batchBody returns a write-events body of n events; event i has the
// subject and type of place(i).
func batchBody(n int, place func(i int) (subject, eventType string)) []byte {
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		subject, eventType := place(i)
		fmt.Fprintf(&b, `{"source":"https://bench.eventstore.example","subject":%q,"type":%q,"data":{"amount":%d,"currency":"EUR","customer":"c-%06d","note":"an ordinary event of a few hundred bytes","items":[{"sku":"a-1","qty":1},{"sku":"b-2","qty":3}]}}`, subject, eventType, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func (t Target) post(ctx context.Context, client *http.Client, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}

// Write runs clients that each write batch events of eventType per request
// for duration, every client on a subject of its own, and returns the result.
func (t Target) Write(ctx context.Context, name, eventType string, clients, batch int, duration time.Duration) Result {
	client := newClient(clients)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		requests  atomic.Int64
		errors    atomic.Int64
	)
	ctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			body := writeBody(fmt.Sprintf("/bench/writer-%d/client-%d", batch, c), eventType, batch)
			own := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				begin := time.Now()
				resp, err := t.post(ctx, client, "/api/v1/write-events", body)
				if err != nil {
					if ctx.Err() == nil {
						errors.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					if errors.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "bench: write answered %d\n", resp.StatusCode)
					}
					continue
				}
				own = append(own, time.Since(begin))
				requests.Add(1)
			}
			mu.Lock()
			latencies = append(latencies, own...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	n := requests.Load()
	return Result{Name: name, Requests: n, Events: n * int64(batch), Errors: errors.Load(), Elapsed: elapsed, Latencies: latencies}
}

// Fill writes n events on subject in batches of 1,000, interleaved with as
// many events on other subjects, so that reading subject skips over them.
func (t Target) Fill(ctx context.Context, subject string, n int) error {
	own, other := writeBody(subject, EventType, 1000), writeBody(subject+"-neighbour", EventType, 1000)
	return t.fill(ctx, (n+999)/1000, func(int) [][]byte { return [][]byte{own, other} })
}

// RareEventType is the type of the events the query scenario selects.
const RareEventType = "io.eventstore.bench.flagged"

// FillMixed writes n events below prefix in batches of 1,000: one in a
// hundred of RareEventType on prefix/rare, the others of EventType, each
// batch on a subject prefix/common/<batch> of its own.
func (t Target) FillMixed(ctx context.Context, prefix string, n int) error {
	return t.fill(ctx, (n+999)/1000, func(batch int) [][]byte {
		common := fmt.Sprintf("%s/common/%d", prefix, batch)
		return [][]byte{batchBody(1000, func(i int) (string, string) {
			if i%100 == 99 {
				return prefix + "/rare", RareEventType
			}
			return common, EventType
		})}
	})
}

// fill posts the bodies of every batch to write-events.
func (t Target) fill(ctx context.Context, batches int, bodies func(batch int) [][]byte) error {
	client := newClient(2)
	for batch := 0; batch < batches; batch++ {
		for _, body := range bodies(batch) {
			resp, err := t.post(ctx, client, "/api/v1/write-events", body)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("fill: status %d", resp.StatusCode)
			}
		}
	}
	return nil
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

// RegisterSchema binds schema to eventType.
func (t Target) RegisterSchema(ctx context.Context, eventType, schema string) error {
	resp, err := t.post(ctx, newClient(1), "/api/v1/register-event-schema", []byte(`{"eventType":"`+eventType+`","schema":`+schema+`}`))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("register schema: %d %s", resp.StatusCode, body)
	}
	return nil
}

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
	var line struct {
		Type    string
		Payload int64
	}
	if err := json.NewDecoder(resp.Body).Decode(&line); err != nil || line.Type != "row" {
		return 0, fmt.Errorf("count: status %d, %v", resp.StatusCode, err)
	}
	return line.Payload, nil
}

// stream posts body to an NDJSON endpoint rounds times, one request after
// the other, counting the lines it answers with as events and sampling the
// server's Go heap meanwhile.
func (t Target) stream(ctx context.Context, name, path string, body []byte, rounds int) Result {
	client := newClient(1)
	res := Result{Name: name}
	sampler := newClient(1)
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
