package e2e

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// checkReadOnly checks that inst refuses writes and registrations in
// read-only mode and serves everything else.
func checkReadOnly(t *testing.T, inst *harness.Instance) {
	t.Helper()
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, candidates("/a", "io.example.x")), 503, "service unavailable: read-only mode")
	checkError(t, inst.Do("POST", "/api/v1/register-event-schema", harness.Token, `{"eventType":"io.example.x","schema":{"type":"object","properties":{}}}`),
		503, "service unavailable: read-only mode")
	if lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`); len(lines) != 1 {
		t.Fatalf("read-events in read-only mode: %d lines", len(lines))
	}
	if r := inst.Do("POST", queryPath, harness.Token, queryBody("FROM e IN events PROJECT INTO COUNT()")); r.StatusCode != 200 {
		t.Fatalf("a query in read-only mode: %d", r.StatusCode)
	}
	o := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
	o.events(t, 1, 5*time.Second)
	var report struct {
		Status string `json:"status"`
		Checks map[string][]struct {
			ObservedValue any    `json:"observedValue"`
			Status        string `json:"status"`
		} `json:"checks"`
	}
	r := inst.Do("GET", "/api/v1/health", harness.Token, "")
	if err := json.Unmarshal(r.Body, &report); err != nil || r.StatusCode != 200 || report.Status != "pass" {
		t.Fatalf("health in read-only mode: %d %s", r.StatusCode, r.Body)
	}
	if mode := report.Checks["mode"]; len(mode) != 1 || mode[0].ObservedValue != "read-only" || mode[0].Status != "pass" {
		t.Fatalf("health check mode: %+v", mode)
	}
	if got := metrics(t, inst)["eventstore_read_only"]; got != 1 {
		t.Fatalf("eventstore_read_only %v", got)
	}
}

func TestPutIntoReadOnlyMode(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	if got := metrics(t, inst)["eventstore_read_only"]; got != 0 {
		t.Fatalf("eventstore_read_only %v before", got)
	}
	for i := 0; i < 2; i++ { // idempotent
		r := inst.Do("POST", "/api/v1/put-into-read-only-mode", harness.Token, "")
		var ev map[string]any
		if err := json.Unmarshal(r.Body, &ev); err != nil || r.StatusCode != 200 || ev["type"] != "io.eventsourcingdb.api.read-only-mode-entered" ||
			ev["subject"] != "/api/v1/put-into-read-only-mode" || len(ev) != 8 {
			t.Fatalf("put-into-read-only-mode: %d %s", r.StatusCode, r.Body)
		}
	}
	checkReadOnly(t, inst)
	checkError(t, inst.Do("POST", "/api/v1/put-into-read-only-mode", "", ""), 401, "unauthorized")
}

func TestReadOnlyFlag(t *testing.T) {
	dir := t.TempDir()
	inst := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false", "--http-port=0")
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	inst.Signal(syscall.SIGTERM)
	inst.Wait(10 * time.Second)
	inst = harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false", "--http-port=0", "--read-only")
	checkReadOnly(t, inst)
}
