package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// writers write batches of 1 to 5 events in the background, each request
// to the URL that url returns then, until stop; they note the events of
// every 200 and the outcome of every other request. A request whose answer
// is lost may or may not be stored.
type writers struct {
	stopped chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	acked    map[string]string // id -> event JSON as acknowledged
	failures map[string]int    // outcome other than 200 -> count
	lastOK   time.Time
}

// startWriters starts n writers on subjects below prefix, adding the
// acknowledged events to acked.
func startWriters(n int, prefix string, url func() string, acked map[string]string) *writers {
	ws := &writers{stopped: make(chan struct{}), acked: acked, failures: map[string]int{}}
	for w := 0; w < n; w++ {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			defer client.CloseIdleConnections()
			subject := fmt.Sprintf("%s/%d", prefix, w)
			for i := 0; ; i++ {
				select {
				case <-ws.stopped:
					return
				default:
				}
				events, err := postEvents(client, url()+"/api/v1/write-events", subject, fmt.Sprintf("%s/%d", subject, i), 1+i%5)
				ws.note(events, err)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	return ws
}

func (ws *writers) note(events []storedEvent, err error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err != nil {
		ws.failures[outcome(err)]++
		return
	}
	ws.lastOK = time.Now()
	for _, e := range events {
		ws.acked[e.ID] = string(e.raw)
	}
}

// outcome names an error of postEvents: the status and body, or the
// transport failure without its addresses.
func outcome(err error) string {
	var status *statusError
	if errors.As(err, &status) {
		return fmt.Sprintf("%d %s", status.code, strings.TrimSpace(status.body))
	}
	return "transport error"
}

// stop ends the writers and waits for them.
func (ws *writers) stop() {
	close(ws.stopped)
	ws.wg.Wait()
}

// acknowledged returns the number of acknowledged events so far.
func (ws *writers) acknowledged() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.acked)
}

// okSince reports whether a write was acknowledged after t.
func (ws *writers) okSince(t time.Time) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.lastOK.After(t)
}

// checkNoDuplicates reads every event and fails if a request's event is
// stored twice (each event's data carries its request and position).
func checkNoDuplicates(t *testing.T, inst harness.Target) {
	t.Helper()
	seen := map[string]string{}
	for _, l := range stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`) {
		e := parseEvent(t, l.Payload)
		req, j, key, ok := requestOf(e)
		if !ok {
			continue
		}
		if first, ok := seen[key]; ok {
			t.Fatalf("event %d of request %s stored twice: ids %s and %s", j, req, first, e.ID)
		}
		seen[key] = e.ID
	}
}

// verifyClean runs `eventstore verify` with args and fails unless it finds
// exactly total events and no problem.
func verifyClean(t *testing.T, total int, args ...string) {
	t.Helper()
	code, stdout, stderr := harness.Run(t, bin, 2*time.Minute, append([]string{"verify"}, args...)...)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("verified %d events", total)) {
		t.Fatalf("verify: exit %d, %q %q", code, stdout, stderr)
	}
}

// requestOf returns the request key and the position in its request that
// event e carries in its data (req, j), and "req#j"; false when it
// carries none.
func requestOf(e storedEvent) (req string, j int, key string, ok bool) {
	var data struct {
		Req string `json:"req"`
		J   int    `json:"j"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || data.Req == "" {
		return "", 0, "", false
	}
	return data.Req, data.J, fmt.Sprintf("%s#%d", data.Req, data.J), true
}
