package e2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

const verifyStorePath = "/api/v1/verify-store"

// verificationLine is the payload of the line that ends a verify-store stream.
type verificationLine struct {
	Verified bool    `json:"verified"`
	Events   *uint64 `json:"events"`
	HeadHash string  `json:"headHash"`
	Problem  string  `json:"problem"`
}

// verifyStore runs verify-store and returns its verification and the
// heartbeat lines before it, checking that nothing else comes and that
// each heartbeat follows an idle second.
func verifyStore(t *testing.T, inst *harness.Instance, body string) (verificationLine, []timedLine) {
	t.Helper()
	o := openStream(t, inst, verifyStorePath, body)
	var heartbeats []timedLine
	last := o.started
	for {
		l := o.next(t, 2*time.Minute)
		if idle := l.at.Sub(last); l.Type == "heartbeat" && idle < 900*time.Millisecond {
			t.Fatalf("heartbeat after %s idle", idle)
		}
		last = l.at
		switch l.Type {
		case "heartbeat":
			if l.raw != `{"type":"heartbeat","payload":{}}`+"\n" {
				t.Fatalf("heartbeat line %q", l.raw)
			}
			heartbeats = append(heartbeats, l)
		case "verification":
			var v verificationLine
			if err := json.Unmarshal(l.Payload, &v); err != nil || v.Events == nil {
				t.Fatalf("verification line %q: %v", l.raw, err)
			}
			if _, ok := <-o.lines; ok {
				t.Fatal("a line after the verification")
			}
			return v, heartbeats
		default:
			t.Fatalf("unexpected line %q", l.raw)
		}
	}
}

// fillStore writes n events in requests of 1,000 from four clients.
func fillStore(t *testing.T, inst *harness.Instance, n int) {
	t.Helper()
	body := func(client, request int) string {
		var parts []string
		for i := range 1000 {
			parts = append(parts, fmt.Sprintf(`{"source":"https://fill.example.com","subject":"/fill/%d/%d","type":"io.example.filled","data":{"amount":%d,"currency":"EUR","note":"an ordinary event of a few hundred bytes"}}`,
				client, request%10, i))
		}
		return `{"events":[` + strings.Join(parts, ",") + `]}`
	}
	var wg sync.WaitGroup
	for client := range 4 {
		wg.Go(func() {
			for request := client; request < n/1000; request += 4 {
				if r := inst.Do("POST", "/api/v1/write-events", harness.Token, body(client, request)); r.StatusCode != 200 {
					t.Errorf("fill: %d %s", r.StatusCode, r.Body)
					return
				}
			}
		})
	}
	wg.Wait()
}

// keepWriting has clients write one event per request each until stop
// returns; writes counts the acknowledged ones.
func keepWriting(t *testing.T, inst *harness.Instance, clients int) (writes *atomic.Int64, stop func()) {
	t.Helper()
	writes = new(atomic.Int64)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if r := inst.Do("POST", "/api/v1/write-events", harness.Token, candidates(fmt.Sprintf("/live/%d/%d", c, i%5), "io.example.live")); r.StatusCode != 200 {
					t.Errorf("write: %d %s", r.StatusCode, r.Body)
					return
				}
				writes.Add(1)
			}
		})
	}
	return writes, func() { close(done); wg.Wait() }
}

// eventHash returns the hash of event id, read back through read-events.
func eventHash(t *testing.T, inst *harness.Instance, id uint64) string {
	t.Helper()
	lines := stream(t, inst, "/api/v1/read-events", fmt.Sprintf(`{"subject":"/","options":{"recursive":true,"lowerBound":{"id":"%d","type":"inclusive"},"upperBound":{"id":"%d","type":"inclusive"}}}`, id, id))
	if len(lines) != 1 {
		t.Fatalf("read event %d: %d lines", id, len(lines))
	}
	return parseEvent(t, lines[0].Payload).Hash
}

// TestVerifyStoreWhileWriting verifies a store of 1,200,000 events while
// eight writers go on writing: the answer covers exactly the snapshot at
// the request (its count lies between the counts before and after, and its
// head hash is the hash of its last event), and heartbeats keep the stream
// alive while the verification runs for seconds.
func TestVerifyStoreWhileWriting(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	const filled = 1_200_000
	fillStore(t, inst, filled)

	writes, stop := keepWriting(t, inst, 8)
	waitUntil(t, 10*time.Second, func() bool { return writes.Load() > 0 })
	start := time.Now()
	v, heartbeats := verifyStore(t, inst, "")
	t.Logf("verified %d events in %s with %d heartbeats while %d writes went on", *v.Events, time.Since(start).Round(time.Millisecond), len(heartbeats), writes.Load())
	after := uint64(healthValue(t, inst, "storage:events"))
	stop()

	if !v.Verified || v.Problem != "" || *v.Events <= filled || *v.Events > after {
		t.Fatalf("verification %+v (events %d), want verified with more than %d and at most %d events", v, *v.Events, filled, after)
	}
	if want := eventHash(t, inst, *v.Events-1); v.HeadHash != want {
		t.Fatalf("head hash %s, the hash of event %d is %s", v.HeadHash, *v.Events-1, want)
	}
	if len(heartbeats) == 0 {
		t.Fatalf("no heartbeat during a verification of %d events (make the store bigger if the machine got faster)", *v.Events)
	}
	if logged := inst.WaitForLog("store verified", 5*time.Second); logged["events"] != float64(*v.Events) {
		t.Fatalf("log entry of the verification: %v", logged)
	}
	if writes.Load() < 10 {
		t.Fatalf("only %d writes during the verification", writes.Load())
	}
}

// tamperEvent changes the record of event id in the Pebble store of the
// data directory dir of a stopped service (change returns nil to delete
// it). Records are keyed 'e' and the id as 8 bytes big-endian (see
// modules/store/pebblestore/keys.go).
func tamperEvent(t *testing.T, dir string, id uint64, change func(record []byte) []byte) {
	t.Helper()
	db, err := pebble.Open(filepath.Join(dir, "pebble"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := binary.BigEndian.AppendUint64([]byte{'e'}, id)
	record, closer, err := db.Get(key)
	if err != nil {
		t.Fatalf("read event %d: %v", id, err)
	}
	changed := change(append([]byte(nil), record...))
	closer.Close()
	if changed == nil {
		err = db.Delete(key, pebble.Sync)
	} else {
		err = db.Set(key, changed, pebble.Sync)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// quietPebble keeps Pebble's messages out of the test output.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// TestVerifyStoreFindsDamage damages a stopped store in the middle, where
// the check at start does not look, restarts it, and has verify-store find
// the first problem, as `eventstore verify` does offline.
func TestVerifyStoreFindsDamage(t *testing.T) {
	cases := []struct {
		name    string
		id      uint64
		change  func(record []byte) []byte
		problem string
	}{
		{"changed data", 7, func(r []byte) []byte { return []byte(strings.Replace(string(r), `"n":7`, `"n":8`, 1)) }, "event 7: stored hash "},
		{"missing event", 12, func([]byte) []byte { return nil }, "event 12 is missing (next stored id is 13)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
			inst := harness.Start(t, bin, args...)
			var pairs []string
			for range 20 {
				pairs = append(pairs, "/books/42", "io.example.book-borrowed")
			}
			mustWrite(t, inst, candidates(pairs...))
			if v, _ := verifyStore(t, inst, "{}"); !v.Verified || *v.Events != 20 {
				t.Fatalf("verification of the intact store: %+v", v)
			}
			inst.Signal(syscall.SIGTERM)
			if code := inst.Wait(10 * time.Second); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			tamperEvent(t, dir, tc.id, tc.change)

			inst = harness.Start(t, bin, args...)
			v, _ := verifyStore(t, inst, "")
			if v.Verified || *v.Events != tc.id || !strings.HasPrefix(v.Problem, tc.problem) || v.HeadHash != "" {
				t.Fatalf("verification of the damaged store: %+v (events %d), want the problem %q at event %d", v, *v.Events, tc.problem, tc.id)
			}
			if logged := inst.WaitForLog("store verification found a problem", 5*time.Second); logged["problem"] != v.Problem {
				t.Fatalf("log entry of the problem: %v", logged)
			}
			inst.Signal(syscall.SIGTERM)
			inst.Wait(10 * time.Second)
			if code, out := runVerify(t, dir); code != 1 || !strings.Contains(out, v.Problem) {
				t.Fatalf("eventstore verify: exit %d, %s; want the problem %q", code, out, v.Problem)
			}
		})
	}
}

// TestVerifyStoreRequests: the body is empty or an object, the token is
// required, and a verification is one of the streams --max-streams bounds.
func TestVerifyStoreRequests(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--max-streams=1")...)
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	for _, body := range []string{"", "{}", "null", `{"unknown":1}`} {
		if v, heartbeats := verifyStore(t, inst, body); !v.Verified || *v.Events != 1 || len(heartbeats) != 0 {
			t.Fatalf("verify-store with the body %q: %+v", body, v)
		}
	}
	if r := inst.Do("POST", verifyStorePath, harness.Token, `[]`); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("verify-store with an array: %d %s", r.StatusCode, r.Body)
	}
	checkError(t, inst.Do("POST", verifyStorePath, "wrong-token", ""), http.StatusUnauthorized, "unauthorized")
	o := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
	o.events(t, 1, 5*time.Second)
	r := inst.Do("POST", verifyStorePath, harness.Token, "")
	checkError(t, r, http.StatusServiceUnavailable, "service unavailable: too many streams")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	o.cancel()
	waitForGauge(t, inst, "eventstore_streams", 0)
	if v, _ := verifyStore(t, inst, ""); !v.Verified {
		t.Fatalf("verify-store after the observer left: %+v", v)
	}
}
