package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestKillNineLoop runs concurrent writers against the real binary, kills it
// with SIGKILL at a random moment, restarts it, and checks after every
// restart that every acknowledged event is present and byte-identical, that
// ids are contiguous and that the hash chain is intact.
func TestKillNineLoop(t *testing.T) {
	const iterations = 20
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	acked := map[string]string{} // id -> event JSON as acknowledged

	for i := 0; i < iterations; i++ {
		inst := harness.Start(t, bin, args...)
		checkStore(t, inst, acked)

		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			stop = make(chan struct{})
		)
		url := inst.URL("http") + "/api/v1/write-events"
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				client := &http.Client{Timeout: 10 * time.Second}
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					events, err := postEvents(client, url, fmt.Sprintf("/crash/%d/%d", i, w), 1+n%5)
					if err != nil {
						return // the server is gone; unacknowledged writes may or may not be stored
					}
					mu.Lock()
					for _, e := range events {
						acked[e.ID] = string(e.raw)
					}
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(time.Duration(50+rng.IntN(350)) * time.Millisecond)
		inst.Signal(syscall.SIGKILL)
		if code := inst.Wait(10 * time.Second); code != -1 && code != 137 {
			t.Logf("iteration %d: exit code %d after SIGKILL", i, code)
		}
		close(stop)
		wg.Wait()
	}

	inst := harness.Start(t, bin, args...)
	total := checkStore(t, inst, acked)
	if total < len(acked) || len(acked) < iterations {
		t.Fatalf("%d events stored, %d acknowledged", total, len(acked))
	}
	t.Logf("%d iterations, %d acknowledged events, %d stored", iterations, len(acked), total)
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	code, stdout, stderr := harness.Run(t, bin, 60*time.Second, "verify", "--data-directory="+dir)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("verified %d events", total)) {
		t.Fatalf("verify after the crash loop: exit %d, %q %q", code, stdout, stderr)
	}
}

// postEvents writes n events on subject and returns them, or an error if
// no complete 200 answer arrived.
func postEvents(client *http.Client, url, subject string, n int) ([]storedEvent, error) {
	var parts []string
	for j := 0; j < n; j++ {
		parts = append(parts, fmt.Sprintf(`{"source":"https://crash.example.com","subject":%q,"type":"io.example.crash","data":{"j":%d,"pad":%q}}`, subject, j, strings.Repeat("p", j*50)))
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"events":[`+strings.Join(parts, ",")+`]}`))
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, buf.String())
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &raws); err != nil {
		return nil, err
	}
	events := make([]storedEvent, len(raws))
	for i, raw := range raws {
		var e storedEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, err
		}
		e.raw = raw
		events[i] = e
	}
	return events, nil
}

// checkStore reads every event and checks contiguity, the chain and the
// acknowledged events; it returns the number of events.
func checkStore(t *testing.T, inst harness.Target, acked map[string]string) int {
	t.Helper()
	lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)
	prev := strings.Repeat("0", 64)
	stored := make(map[string]string, len(lines))
	for i, l := range lines {
		e := parseEvent(t, l.Payload)
		if e.ID != fmt.Sprint(i) {
			t.Fatalf("event at position %d has id %s", i, e.ID)
		}
		if e.PredecessorHash != prev {
			t.Fatalf("event %s links to %s, want %s", e.ID, e.PredecessorHash, prev)
		}
		prev = e.Hash
		stored[e.ID] = string(l.Payload)
	}
	for id, raw := range acked {
		if stored[id] != raw {
			t.Fatalf("acknowledged event %s lost or changed:\n acked %s\nstored %s", id, raw, stored[id])
		}
	}
	return len(lines)
}
