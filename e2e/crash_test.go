package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
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
		ws := startWriters(8, fmt.Sprintf("/crash/%d", i), func() string { return inst.URL("http") }, acked)
		time.Sleep(time.Duration(50+rng.IntN(350)) * time.Millisecond)
		inst.Signal(syscall.SIGKILL)
		if code := inst.Wait(10 * time.Second); code != -1 && code != 137 {
			t.Logf("iteration %d: exit code %d after SIGKILL", i, code)
		}
		ws.stop()
	}

	inst := harness.Start(t, bin, args...)
	total := checkStore(t, inst, acked)
	if total < len(acked) || len(acked) < iterations {
		t.Fatalf("%d events stored, %d acknowledged", total, len(acked))
	}
	checkNoDuplicates(t, inst)
	t.Logf("%d iterations, %d acknowledged events, %d stored", iterations, len(acked), total)
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	verifyClean(t, total, "--data-directory="+dir)
}

// postEvents writes n events on subject, each with request req and its
// position in the data, and returns them, or an error (a *statusError for
// an answer other than 200) if no complete 200 answer arrived.
func postEvents(client *http.Client, url, subject, req string, n int) ([]storedEvent, error) {
	var parts []string
	for j := 0; j < n; j++ {
		parts = append(parts, fmt.Sprintf(`{"source":"https://crash.example.com","subject":%q,"type":"io.example.crash","data":{"req":%q,"j":%d,"pad":%q}}`, subject, req, j, strings.Repeat("p", j*50)))
	}
	return postWrite(client, url, `{"events":[`+strings.Join(parts, ",")+`]}`)
}

// postWrite posts a write-events body to url and returns the events of a
// complete 200 answer, or an error (a *statusError for another status).
func postWrite(client *http.Client, url, body string) ([]storedEvent, error) {
	request, _ := http.NewRequest("POST", url, strings.NewReader(body))
	request.Header.Set("Authorization", "Bearer "+harness.Token)
	resp, err := client.Do(request)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, &statusError{code: resp.StatusCode, body: buf.String(), retryAfter: resp.Header.Get("Retry-After")}
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

// statusError is an answer other than 200.
type statusError struct {
	code             int
	body, retryAfter string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.code, e.body) }

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
