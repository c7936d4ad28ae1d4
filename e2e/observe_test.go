package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// observation is an open stream (observe-events, verify-store) read in
// the background.
type observation struct {
	lines   chan timedLine
	cancel  context.CancelFunc
	started time.Time
	headers time.Duration // until status and headers arrived
}

type timedLine struct {
	ndjsonLine
	raw string
	at  time.Time
}

// observe opens an observe-events stream with body and checks that status
// and headers arrive at once; the lines are read into a channel.
func observe(t *testing.T, inst harness.Target, body string) *observation {
	t.Helper()
	return openStream(t, inst, "/api/v1/observe-events", body)
}

// openStream posts body to the stream endpoint path and checks that
// status and headers arrive; the lines are read into a channel.
func openStream(t *testing.T, inst harness.Target, path, body string) *observation {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", inst.URL("http")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	o := &observation{lines: make(chan timedLine, 100_000), cancel: cancel, started: time.Now()}
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		cancel()
		t.Fatalf("%s %s: %v", path, body, err)
	}
	o.headers = time.Since(o.started)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		cancel()
		t.Fatalf("%s %s: %d %q", path, body, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	go func() {
		defer close(o.lines)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			raw, err := r.ReadString('\n')
			if err != nil {
				return
			}
			var l ndjsonLine
			_ = json.Unmarshal([]byte(raw), &l)
			o.lines <- timedLine{ndjsonLine: l, raw: raw, at: time.Now()}
		}
	}()
	t.Cleanup(cancel)
	return o
}

// next returns the next line, failing after timeout.
func (o *observation) next(t *testing.T, timeout time.Duration) timedLine {
	t.Helper()
	select {
	case l, ok := <-o.lines:
		if !ok {
			t.Fatal("stream ended")
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no line within %s", timeout)
		return timedLine{}
	}
}

// events collects n event lines, skipping heartbeats, within timeout.
func (o *observation) events(t *testing.T, n int, timeout time.Duration) []storedEvent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var out []storedEvent
	for len(out) < n {
		l := o.next(t, time.Until(deadline))
		switch l.Type {
		case "event":
			out = append(out, parseEvent(t, l.Payload))
		case "heartbeat":
			if string(l.Payload) != "{}" {
				t.Fatalf("heartbeat payload %s", l.Payload)
			}
		default:
			t.Fatalf("unexpected line %s", l.raw)
		}
	}
	return out
}

// quiet checks that no event line arrives within d (heartbeats may).
func (o *observation) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l := <-o.lines:
			if l.Type != "heartbeat" {
				t.Fatalf("expected only heartbeats, got %s", l.raw)
			}
		case <-deadline:
			return
		}
	}
}

func ids(events []storedEvent) string {
	var out []string
	for _, e := range events {
		out = append(out, e.ID)
	}
	return strings.Join(out, ",")
}

func TestObserveHistoricThenLive(t *testing.T) { eachTarget(t, testObserveHistoricThenLive) }

func testObserveHistoricThenLive(t *testing.T, start starter) {
	inst := start(t)
	for i := 0; i < 5; i++ {
		mustWrite(t, inst, candidates("/hist/a", "io.example.x", "/hist/b", "io.example.x", "/other", "io.example.x", "/hist/c", "io.example.x", "/hist", "io.example.x",
			"/hist/a", "io.example.x", "/hist/b", "io.example.x", "/other", "io.example.x", "/hist/c", "io.example.x", "/hist", "io.example.x"))
	}
	// Writers are busy while the observer starts and hands over to live events.
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				r, _ := writeEvents(t, inst, candidates(fmt.Sprintf("/hist/w%d", w), "io.example.x", "/other", "io.example.x"))
				if r.StatusCode != 200 {
					t.Errorf("write: %d", r.StatusCode)
					return
				}
			}
		}(w)
	}
	all := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
	sub := observe(t, inst, `{"subject":"/hist","options":{"recursive":true}}`)
	wg.Wait()
	total := 50 + 4*50*2
	got := all.events(t, total, 10*time.Second)
	for i, e := range got {
		if e.ID != fmt.Sprint(i) {
			t.Fatalf("observer of / received id %s at position %d", e.ID, i)
		}
	}
	read := stream(t, inst, "/api/v1/read-events", `{"subject":"/hist","options":{"recursive":true}}`)
	subEvents := sub.events(t, len(read), 10*time.Second)
	for i, l := range read {
		if string(l.Payload) != string(subEvents[i].raw) {
			t.Fatalf("observed event %d differs from the read one:\n%s\n%s", i, subEvents[i].raw, l.Payload)
		}
	}
	sub.quiet(t, 300*time.Millisecond) // nothing beyond what was written
}

func TestObserveOptions(t *testing.T) { eachTarget(t, testObserveOptions) }

func testObserveOptions(t *testing.T, start starter) {
	inst := libraryInstance(t, start)
	cases := []struct {
		body string
		want string // ids of the history
	}{
		{`{"subject":"/books/42"}`, "0,1,3,6"},
		{`{"subject":"/books/42","options":{"recursive":true}}`, "0,1,3,5,6"},
		{`{"subject":"/books/42","options":{"recursive":true,"lowerBound":{"id":"5","type":"inclusive"}}}`, "5,6"},
		{`{"subject":"/books/42","options":{"recursive":true,"lowerBound":{"id":"5","type":"exclusive"}}}`, "6"},
		{`{"subject":"/books","options":{"recursive":true,"fromLatestEvent":{"subject":"/books/42","type":"` + lib + `book-returned","ifEventIsMissing":"wait-for-event"}}}`, "3,5,6"},
		{`{"subject":"/books/42","options":{"fromLatestEvent":{"subject":"/books/42","type":"` + lib + `book-lost","ifEventIsMissing":"read-everything"}}}`, "0,1,3,6"},
		{`{"subject":"/books/42","options":{"fromLatestEvent":{"subject":"/books/42","type":"` + lib + `book-lost","ifEventIsMissing":"observe-everything"}}}`, "0,1,3,6"},
	}
	for _, tc := range cases {
		o := observe(t, inst, tc.body)
		if got := ids(o.events(t, strings.Count(tc.want, ",")+1, 5*time.Second)); got != tc.want {
			t.Errorf("observe %s: history %s, want %s", tc.body, got, tc.want)
		}
		o.cancel()
	}

	for body, want := range map[string]string{
		`{"subject":"/","options":{"order":"chronological"}}`:                    "invalid request: unknown option 'order'",
		`{"subject":"/","options":{"upperBound":{"id":"1","type":"inclusive"}}}`: "invalid request: unknown option 'upperBound'",
		`{"subject":""}`: "invalid subject: ''",
		`{"subject":"/","options":{"fromLatestEvent":{"subject":"/a","type":"ab.c.d","ifEventIsMissing":"read-nothing"}}}`:                                              "invalid request: unknown ifEventIsMissing 'read-nothing', expected 'wait-for-event' or 'read-everything'",
		`{"subject":"/","options":{"lowerBound":{"id":"1","type":"inclusive"},"fromLatestEvent":{"subject":"/a","type":"ab.c.d","ifEventIsMissing":"wait-for-event"}}}`: "invalid request: lowerBound and fromLatestEvent cannot be combined",
		`{"subject":"/","options":{"lowerBound":{"id":"01","type":"inclusive"}}}`:                                                                                       "invalid event id: '01'",
	} {
		checkError(t, inst.Do("POST", "/api/v1/observe-events", harness.Token, body), 400, want)
	}
	checkError(t, inst.Do("POST", "/api/v1/observe-events", "", `{"subject":"/"}`), 401, "unauthorized")
}

func TestObserveWaitForEvent(t *testing.T) { eachTarget(t, testObserveWaitForEvent) }

func testObserveWaitForEvent(t *testing.T, start starter) {
	inst := libraryInstance(t, start)
	wait := `"fromLatestEvent":{"subject":"/books/99","type":"` + lib + `book-acquired","ifEventIsMissing":"wait-for-event"}`
	books := observe(t, inst, `{"subject":"/books","options":{"recursive":true,`+wait+`}}`)
	book42 := observe(t, inst, `{"subject":"/books/42","options":{`+wait+`}}`)

	books.quiet(t, 1300*time.Millisecond) // heartbeats only, the store's history is skipped
	mustWrite(t, inst, candidates("/books/42", lib+"book-borrowed", "/books/99", lib+"book-borrowed"))
	books.quiet(t, 300*time.Millisecond)

	// The awaited event (id 9) is the first; then later matching events follow.
	mustWrite(t, inst, candidates("/books/99", lib+"book-acquired", "/books/42", lib+"book-returned", "/readers/jane", lib+"x-y", "/books/99", lib+"book-acquired"))
	if got := ids(books.events(t, 3, 5*time.Second)); got != "9,10,12" {
		t.Fatalf("/books after the awaited event: %s, want 9,10,12", got)
	}
	// Observing /books/42 with the same option: 9 is on another subject and
	// not delivered; the later /books/42 events are.
	if got := ids(book42.events(t, 1, 5*time.Second)); got != "10" {
		t.Fatalf("/books/42 after the awaited event: %s, want 10", got)
	}
}

func TestObserveHeartbeatsOnEmptyStore(t *testing.T) {
	eachTarget(t, testObserveHeartbeatsOnEmptyStore)
}

func testObserveHeartbeatsOnEmptyStore(t *testing.T, start starter) {
	inst := start(t)
	o := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
	if o.headers > 500*time.Millisecond {
		t.Fatalf("headers took %s on an empty store", o.headers)
	}
	var last = o.started
	for i := 0; i < 3; i++ {
		l := o.next(t, 3*time.Second)
		if l.raw != `{"type":"heartbeat","payload":{}}`+"\n" {
			t.Fatalf("line %q, want a heartbeat", l.raw)
		}
		if gap := l.at.Sub(last); gap < 900*time.Millisecond || gap > 1800*time.Millisecond {
			t.Fatalf("heartbeat %d after %s of silence, want about 1 s", i, gap)
		}
		last = l.at
	}
	// A written event resets the idle timer; the next heartbeat follows it after a second.
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	e := o.next(t, 2*time.Second)
	if e.Type != "event" {
		t.Fatalf("line %q, want the event", e.raw)
	}
	hb := o.next(t, 3*time.Second)
	if gap := hb.at.Sub(e.at); hb.Type != "heartbeat" || gap < 900*time.Millisecond {
		t.Fatalf("after the event: %q %s later", hb.raw, gap)
	}
}

func TestManyObservers(t *testing.T) { eachTarget(t, testManyObservers) }

func testManyObservers(t *testing.T, start starter) {
	inst := start(t)
	const observers, events = 100, 500
	var all []*observation
	for i := 0; i < observers; i++ {
		all = append(all, observe(t, inst, `{"subject":"/","options":{"recursive":true}}`))
	}
	waitForGauge(t, inst, "eventstore_observers", observers)
	began := time.Now()
	for i := 0; i < events/100; i++ {
		var pairs []string
		for j := 0; j < 100; j++ {
			pairs = append(pairs, fmt.Sprintf("/many/%d", j%7), "io.example.x")
		}
		mustWrite(t, inst, candidates(pairs...))
	}
	for i, o := range all {
		got := o.events(t, events, 10*time.Second)
		for j, e := range got {
			if e.ID != fmt.Sprint(j) {
				t.Fatalf("observer %d received id %s at position %d", i, e.ID, j)
			}
		}
	}
	t.Logf("100 observers received %d events in %s (the figure is the observe bench scenario's, not a test's)", events, time.Since(began))
	samples := metrics(t, inst)
	if got := samples["eventstore_observe_events_sent_total"]; got != observers*events {
		t.Errorf("eventstore_observe_events_sent_total = %v, want %d", got, observers*events)
	}
	for _, o := range all {
		o.cancel()
	}
	waitForGauge(t, inst, "eventstore_observers", 0)
}

// TestSlowObserver opens an observer over a raw connection that reads
// nothing for seconds while thousands of events are written (far more than
// the socket buffers hold), and then checks that it still receives every
// event in order.
func TestSlowObserver(t *testing.T) { eachTarget(t, testSlowObserver) }

func testSlowObserver(t *testing.T, start starter) {
	inst := start(t)
	conn, err := dialObserve(inst, `{"subject":"/","options":{"recursive":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const total = 5000
	payload := strings.Repeat("p", 400)
	for i := 0; i < total/500; i++ {
		var parts []string
		for j := 0; j < 500; j++ {
			parts = append(parts, fmt.Sprintf(`{"source":"https://x","subject":"/slow/%d","type":"io.example.slow","data":{"pad":%q}}`, j%3, payload))
		}
		mustWrite(t, inst, `{"events":[`+strings.Join(parts, ",")+`]}`)
	}
	time.Sleep(3 * time.Second) // the observer still reads nothing; writers were not held up
	r := bufio.NewReaderSize(conn, 1<<16)
	next := 0
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for next < total {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d events: %v", next, err)
		}
		if !strings.HasPrefix(line, `{"type":"event"`) {
			continue // chunk sizes and heartbeats
		}
		var l ndjsonLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if e := parseEvent(t, l.Payload); e.ID != fmt.Sprint(next) {
			t.Fatalf("slow observer received id %s, want %d", e.ID, next)
		}
		next++
	}
}

func TestObserversEndOnShutdown(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	const observers = 200
	var all []*observation
	for i := 0; i < observers; i++ {
		o := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
		all = append(all, o)
	}
	for _, o := range all {
		o.events(t, 1, 5*time.Second)
	}
	start := time.Now()
	inst.Signal(syscall.SIGINT)
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d with observers open", code)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("shutdown with %d observers took %s", observers, took)
	}
	for i, o := range all {
		var last string
		for l := range o.lines {
			last = l.raw
		}
		if last != `{"type":"error","payload":{"error":"service unavailable: shutting down"}}`+"\n" {
			t.Fatalf("observer %d: last line %q", i, last)
		}
	}
}

func TestStuckConsumerDoesNotHoldTheShutdown(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--shutdown-drain-period=1s")...)
	// An observer that never reads, and a reader that does.
	stuck, err := dialObserve(inst, `{"subject":"/","options":{"recursive":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	reading := observe(t, inst, `{"subject":"/stuck","options":{"recursive":true}}`)
	// Enough events to fill the stuck connection's socket buffers, so that
	// its handler blocks in a write.
	payload := strings.Repeat("p", 4000)
	for i := 0; i < 20; i++ {
		var parts []string
		for j := 0; j < 500; j++ {
			parts = append(parts, fmt.Sprintf(`{"source":"https://x","subject":"/stuck/%d","type":"io.example.stuck","data":{"pad":%q}}`, j%3, payload))
		}
		mustWrite(t, inst, `{"events":[`+strings.Join(parts, ",")+`]}`)
	}
	reading.events(t, 10_000, 20*time.Second)
	time.Sleep(500 * time.Millisecond) // the stuck handler is in a write by now

	start := time.Now()
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d with a consumer that does not read", code)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("shutdown took %s with a 1 s drain: a consumer that does not read held it up", took)
	}
	var last string
	for l := range reading.lines {
		last = l.raw
	}
	if last != `{"type":"error","payload":{"error":"service unavailable: shutting down"}}`+"\n" {
		t.Fatalf("the reading observer's last line %q", last)
	}
}

func TestObserverGoroutinesAreReleased(t *testing.T) {
	eachTarget(t, testObserverGoroutinesAreReleased)
}

func testObserverGoroutinesAreReleased(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	baseline := metrics(t, inst)["go_goroutines"]
	var all []*observation
	for i := 0; i < 50; i++ {
		o := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
		o.events(t, 1, 5*time.Second)
		all = append(all, o)
	}
	if open := metrics(t, inst)["go_goroutines"]; open < baseline+50 {
		t.Fatalf("goroutines %v with 50 observers open, baseline %v", open, baseline)
	}
	for _, o := range all {
		o.cancel()
	}
	waitUntil(t, 5*time.Second, func() bool { return metrics(t, inst)["go_goroutines"] <= baseline+2 })
	waitForGauge(t, inst, "eventstore_observers", 0)
}

// dialObserve sends an observe-events request over a new raw connection
// and returns the connection, nothing of the response read yet.
func dialObserve(inst harness.Target, body string) (net.Conn, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(inst.URL("http"), "http://"))
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(conn, "POST /api/v1/observe-events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", harness.Token, len(body), body)
	return conn, err
}

// metrics scrapes the OpenMetrics of the target's nodes and adds up each
// series over them (a counter of a cluster counts what all nodes did).
func metrics(t *testing.T, inst harness.Target) map[string]float64 {
	t.Helper()
	sum := map[string]float64{}
	for _, node := range inst.Nodes() {
		r := node.Do("GET", "/api/v1/health?format=openmetrics", harness.Token, "")
		for series, v := range parseOpenMetrics(t, r.Body, r.Header.Get("Content-Type")) {
			sum[series] += v
		}
	}
	return sum
}

func waitForGauge(t *testing.T, inst harness.Target, name string, want float64) {
	t.Helper()
	waitUntil(t, 5*time.Second, func() bool { return metrics(t, inst)[name] == want })
}
