package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

func TestDiagnostics(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--max-queries=3")...)
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	r := inst.Do("GET", "/api/v1/diagnostics", harness.Token, "")
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("diagnostics: %d %s", r.StatusCode, r.Body)
	}
	if strings.Contains(string(r.Body), harness.Token) {
		t.Fatal("the diagnostics show the API token")
	}
	var d struct {
		Version map[string]string `json:"version"`
		System  map[string]any    `json:"system"`
		Process map[string]any    `json:"process"`
		Options map[string]any    `json:"options"`
		Storage map[string]any    `json:"storage"`
	}
	if err := json.Unmarshal(r.Body, &d); err != nil {
		t.Fatal(err)
	}
	if d.Version["goVersion"] == "" || d.System["cpus"] == nil || d.Process["goroutines"] == nil {
		t.Fatalf("version %v system %v process %v", d.Version, d.System, d.Process)
	}
	tokenShown := d.Options["api-token"] == "<redacted>"
	if harness.AccessFileMode() { // started with an access file instead: its path is no secret
		tokenShown = d.Options["api-token"] == "" && strings.HasSuffix(fmt.Sprint(d.Options["access-file"]), "access.yaml")
	}
	if !tokenShown || d.Options["max-queries"] != float64(3) || d.Options["data-directory-temporary"] != true {
		t.Fatalf("options %v", d.Options)
	}
	engine, _ := d.Storage["engine"].(map[string]any)
	if d.Storage["events"] != float64(1) || d.Storage["headId"] != float64(0) || engine["backend"] != "pebble" {
		t.Fatalf("storage %v", d.Storage)
	}
	checkError(t, inst.Do("GET", "/api/v1/diagnostics", "", ""), 401, "unauthorized")

	// The command prints the same report.
	tokenFile := harness.WriteFile(t, t.TempDir(), "token", harness.Token+"\n")
	code, stdout, stderr := harness.Run(t, bin, 10*time.Second, "diagnostics", "--url", inst.URL("http"), "--token-file", tokenFile)
	var printed map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &printed) != nil || printed["storage"] == nil {
		t.Fatalf("eventstore diagnostics: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = harness.Run(t, bin, 10*time.Second, "diagnostics", "--url", inst.URL("http"), "--token", "wrong")
	if code != 1 || !strings.Contains(stderr, "401 unauthorized") {
		t.Fatalf("diagnostics with a wrong token: exit %d, %q", code, stderr)
	}
}

// TestVersionNamesTheRevision checks that a binary built with go build in a
// git checkout reports the checkout's revision.
func TestVersionNamesTheRevision(t *testing.T) {
	head, err := exec.Command("git", "-C", filepath.Join("..", "."), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	code, stdout, _ := harness.Run(t, bin, 10*time.Second, "version")
	if code != 0 || !strings.Contains(stdout, "revision "+strings.TrimSpace(string(head))) {
		t.Fatalf("eventstore version printed %q, want the revision %s", stdout, head)
	}
}
