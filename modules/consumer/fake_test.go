package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeService is an httptest server that speaks the subscription routes
// the way the tests script it: each consume stream is handed to the test,
// which writes its lines; settles and writes are recorded and answered.
type fakeService struct {
	t   *testing.T
	srv *httptest.Server
	// streams receives each consume stream the service accepted.
	streams chan *fakeStream

	mu       sync.Mutex
	opens    []time.Time     // every consume-subscription request
	refusals []refusal       // answers to the next consume-subscription requests
	requests []fakeRequest   // every other request
	stale    map[string]bool // tokens answered as stale
	// write answers write-events; nil answers 200 [].
	write func(body writeRequest) (int, string)
	// onSettle, if set, runs as a settle request arrives.
	onSettle func(route string, body settleBody)
}

// refusal is a status and message to answer a consume request with, or
// no answer at all (hang) until the client gives up.
type refusal struct {
	status  int
	message string
	hang    bool
}

// fakeRequest is a recorded request.
type fakeRequest struct {
	route string
	body  []byte
}

// writeRequest is the body of write-events.
type writeRequest struct {
	Events        []map[string]any `json:"events"`
	Preconditions []Precondition   `json:"preconditions"`
	Acknowledge   *Acknowledgement `json:"acknowledge"`
}

// fakeStream is one accepted consume stream.
type fakeStream struct {
	lines chan string
	// gone is closed when the client closed the stream.
	gone <-chan struct{}
}

// send writes lines to the stream.
func (s *fakeStream) send(lines ...string) {
	for _, l := range lines {
		s.lines <- l
	}
}

// end ends the stream from the service's side.
func (s *fakeStream) end() { close(s.lines) }

func newFakeService(t *testing.T) *fakeService {
	f := &fakeService{t: t, streams: make(chan *fakeStream, 100), stale: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// client returns a client of the fake service.
func (f *fakeService) client() *Client { return NewClient(f.srv.URL+"/", "secret", nil) }

func (f *fakeService) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer secret" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	route := strings.TrimPrefix(r.URL.Path, "/api/v1/")
	body, _ := io.ReadAll(r.Body)
	if route == "consume-subscription" {
		f.consume(w, r)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{route, body})
	f.mu.Unlock()
	switch route {
	case "acknowledge-deliveries", "retry-deliveries", "park-deliveries", "extend-deliveries":
		var b settleBody
		if err := json.Unmarshal(body, &b); err != nil {
			http.Error(w, "invalid request: malformed JSON", http.StatusBadRequest)
			return
		}
		if f.onSettle != nil {
			f.onSettle(route, b)
		}
		f.mu.Lock()
		stale := []string{}
		for _, tok := range b.Deliveries {
			if f.stale[tok] {
				stale = append(stale, tok)
			}
		}
		f.mu.Unlock()
		key := map[string]string{"acknowledge-deliveries": "acknowledged", "retry-deliveries": "retried", "park-deliveries": "parked", "extend-deliveries": "extended"}[route]
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{key: len(b.Deliveries) - len(stale), "stale": stale})
	case "write-events":
		var b writeRequest
		if err := json.Unmarshal(body, &b); err != nil {
			http.Error(w, "invalid request: malformed JSON", http.StatusBadRequest)
			return
		}
		status, answer := http.StatusOK, "[]"
		if f.write != nil {
			status, answer = f.write(b)
		}
		if status != http.StatusOK {
			http.Error(w, answer, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer+"\n")
	default:
		http.Error(w, "not found: unknown route", http.StatusNotFound)
	}
}

func (f *fakeService) consume(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.opens = append(f.opens, time.Now())
	var refuse *refusal
	if len(f.refusals) > 0 {
		refuse = &f.refusals[0]
		f.refusals = f.refusals[1:]
	}
	f.mu.Unlock()
	if refuse != nil && refuse.hang {
		<-r.Context().Done()
		return
	}
	if refuse != nil {
		http.Error(w, refuse.message, refuse.status)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	flusher.Flush()
	s := &fakeStream{lines: make(chan string, 10_000), gone: r.Context().Done()}
	f.streams <- s
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return
			}
			_, _ = io.WriteString(w, l+"\n")
			flusher.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// stream returns the next accepted consume stream.
func (f *fakeService) stream() *fakeStream {
	f.t.Helper()
	select {
	case s := <-f.streams:
		return s
	case <-time.After(10 * time.Second):
		f.t.Fatal("no consume stream opened")
		return nil
	}
}

// settled returns the tokens of every request to route, request by
// request, and the bodies.
func (f *fakeService) settled(route string) ([][]string, []settleBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var tokens [][]string
	var bodies []settleBody
	for _, r := range f.requests {
		if r.route != route {
			continue
		}
		var b settleBody
		_ = json.Unmarshal(r.body, &b)
		tokens = append(tokens, b.Deliveries)
		bodies = append(bodies, b)
	}
	return tokens, bodies
}

// writes returns the bodies of the write-events requests.
func (f *fakeService) writes() []writeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []writeRequest
	for _, r := range f.requests {
		if r.route == "write-events" {
			var b writeRequest
			_ = json.Unmarshal(r.body, &b)
			out = append(out, b)
		}
	}
	return out
}

// assignmentLine is an assignment line of partitions.
func assignmentLine(partitions ...int) string {
	raw, _ := json.Marshal(map[string][]int{"partitions": append([]int{}, partitions...)})
	return `{"type":"assignment","payload":` + string(raw) + `}`
}

// deliveryLine is a delivery line of the event id on subject.
func deliveryLine(token string, partition, attempt int, id int, subject string) string {
	return fmt.Sprintf(`{"type":"delivery","payload":{"delivery":%q,"attempt":%d,"partition":%d,"event":{"source":"https://x","subject":%q,"type":"io.example.x","specversion":"1.0","id":"%d","time":"2026-01-02T03:04:05.000000001Z","datacontenttype":"application/json","predecessorhash":"%s","data":{"n":%d},"hash":"%s","signature":null}}}`,
		token, attempt, partition, subject, id, strings.Repeat("0", 64), id, strings.Repeat("a", 64))
}

// running is a Consume running in a goroutine.
type running struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// runConsume runs Consume of "billing" as "w1" until the test stops it.
func runConsume(t *testing.T, c *Client, h Handler, o ConsumeOptions) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = c.Consume(ctx, "billing", "w1", h, o)
		close(r.done)
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// wait returns Consume's error once it returned by itself.
func (r *running) wait() error {
	r.t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(10 * time.Second):
		r.t.Fatal("Consume did not return")
		return nil
	}
}

// stop ends Consume's context and returns its error.
func (r *running) stop() error {
	r.t.Helper()
	r.cancel()
	return r.wait()
}

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
