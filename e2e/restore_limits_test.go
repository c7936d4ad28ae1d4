package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestRestoreRefusesALineLongerThanAnyValidOne: a restore whose first
// line goes on for 1 GiB is refused once the line is longer than any valid
// event or schema line, without the service holding it: its peak resident
// memory stays within 100 MiB of an idle one's.
func TestRestoreRefusesALineLongerThanAnyValidOne(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	inst.Do("GET", "/api/v1/ping", "", "")
	idle := residentSet(inst.Pid())
	const size = 1 << 30
	c := dialRaw(t, inst)
	c.send(t, announced("/api/v1/restore", harness.Token, size)+`{"type":"event","payload":{"event":{"specversion":"1.0","id":"0","data":{"text":"`)
	var sent atomic.Int64
	go func() {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for sent.Load() < size-(1<<20) {
			n, err := c.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	resp, body := c.answer(t, time.Minute)
	limit := 16<<20 + 64<<10 // --max-request-size (the largest schema) and room for the other members
	if want := fmt.Sprintf("invalid backup: line 1: the line is longer than the limit of %d bytes\n", limit); resp.StatusCode != 400 || body != want {
		t.Fatalf("a line of 1 GiB: %d %q, want 400 %q", resp.StatusCode, body, want)
	}
	peak := procMemory(inst.Pid(), "VmHWM")
	t.Logf("refused after %d MiB sent; resident memory idle %d MiB, peak %d MiB", sent.Load()>>20, idle>>20, peak>>20)
	if idle == 0 || peak-idle > 100<<20 {
		t.Fatalf("the peak resident memory %d MiB is more than 100 MiB above the idle %d MiB", peak>>20, idle>>20)
	}
	if got := allEvents(t, inst); got != "" {
		t.Fatalf("the refused restore left events: %.100s", got)
	}
	mustWrite(t, inst, candidates("/after", "io.example.x"))
}

// TestStalledRestoreIsAborted: a restore whose body stalls longer than
// the body idle limit is aborted with 408, the store is empty again, and
// everyone is served again.
func TestStalledRestoreIsAborted(t *testing.T) {
	source := harness.Start(t, bin, harness.Dev()...)
	variedEvents(t, source, 20)
	raw, _ := os.ReadFile(runBackup(t, source))
	target := harness.Start(t, bin, harness.Dev("--request-body-idle-timeout=1s")...)
	c := dialRaw(t, target)
	c.send(t, announced("/api/v1/restore", harness.Token, len(raw))+string(raw[:len(raw)*3/4]))
	waitUntil(t, 5*time.Second, func() bool {
		return target.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":"/"}`).StatusCode == http.StatusServiceUnavailable
	})
	resp, body := c.answer(t, 10*time.Second)
	if resp.StatusCode != 408 || body != "request timeout: the request body stalled\n" {
		t.Fatalf("a stalled restore: %d %q", resp.StatusCode, body)
	}
	if got := allEvents(t, target); got != "" {
		t.Fatalf("the aborted restore left events: %.100s", got)
	}
	if lines := stream(t, target, "/api/v1/read-event-types", ""); len(lines) != 0 {
		t.Fatalf("the aborted restore left event types: %v", lines)
	}
	// Everyone is served again, and the store takes the backup whole.
	if r := target.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(string(raw))); r.StatusCode != 200 {
		t.Fatalf("the restore after the aborted one: %d %s", r.StatusCode, r.Body)
	}
	if allEvents(t, target) != allEvents(t, source) {
		t.Fatal("the restored events differ")
	}
}

// TestRefusedRestoresDisturbNoOne: restores into a store that is not
// empty, in a loop, are refused (409) before the service enters "restore
// in progress": readers and writers beside them never get a 503.
func TestRefusedRestoresDisturbNoOne(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	mustWrite(t, inst, candidates("/books/1", "io.example.book-added"))
	var (
		refused  atomic.Int64
		requests atomic.Int64
		failures sync.Map
	)
	stopRestores := storetest.Loop(4, func(_, _ int) bool {
		r := inst.Do("POST", "/api/v1/restore", harness.Token, `{"type":"schema","payload":{"eventType":"io.example.x","schema":{"type":"object","properties":{}}}}`+"\n")
		if r.StatusCode != 409 || string(r.Body) != "state conflict: the store is not empty\n" {
			failures.Store(fmt.Sprintf("restore: %d %s", r.StatusCode, r.Body), true)
		}
		refused.Add(1)
		return true
	})
	stopOthers := storetest.Loop(2, func(_, _ int) bool {
		for _, r := range []harness.Response{
			inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"io.example.book-added"}`),
			inst.Do("POST", "/api/v1/write-events", harness.Token, candidates("/books/2", "io.example.book-added")),
		} {
			requests.Add(1)
			if r.StatusCode != 200 {
				failures.Store(fmt.Sprintf("%s: %d %s", r.Request.URL.Path, r.StatusCode, r.Body), true)
			}
		}
		return true
	})
	time.Sleep(3 * time.Second)
	stopRestores()
	stopOthers()
	failures.Range(func(k, _ any) bool {
		t.Errorf("%s", k)
		return true
	})
	t.Logf("%d refused restores beside %d other requests", refused.Load(), requests.Load())
}
