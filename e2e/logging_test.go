package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

func TestRunningAnnouncement(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	running := inst.Logs("eventstore is running")
	if len(running) != 1 {
		t.Fatalf("want exactly one running entry, got %d", len(running))
	}
	e := running[0]
	for _, key := range []string{"version", "revision", "goVersion", "listeners", "dataDirectory", "temporary", "ui", "signing"} {
		if _, ok := e[key]; !ok {
			t.Errorf("running entry lacks %s: %v", key, e)
		}
	}
	if e["level"] != "INFO" || e["ui"] != true || e["temporary"] != true || e["signing"] != false {
		t.Fatalf("running entry: %v", e)
	}
	if len(inst.Logs("plain HTTP enabled")) != 1 {
		t.Fatal("no WARN for plain HTTP")
	}
}

func TestTokenNeverLogged(t *testing.T) {
	const token = "Short-Secret-7x"
	inst := harness.Start(t, bin, "run", "--api-token="+token, "--data-directory-temporary", "--http-enabled",
		"--https-enabled=false", "--http-port=0", "--log-level=debug")
	inst.Do("GET", "/api/v1/health", token, "")
	inst.Do("GET", "/api/v1/health?format=openmetrics", token, "")
	inst.Do("POST", "/api/v1/verify-api-token", token, `{"token":"`+token+`"}`)
	inst.Do("POST", "/api/v1/verify-api-token", token+"-wrong", "")
	inst.Do("POST", "/api/v1/verify-api-token?apiToken="+token, "", "")
	inst.Do("GET", "/api/v1/nope", token, "")
	inst.Signal(syscall.SIGTERM)
	inst.Wait(10 * time.Second)

	digest := sha256.Sum256([]byte(token))
	forbidden := []string{token, token[:8], hex.EncodeToString(digest[:]), base64.StdEncoding.EncodeToString([]byte(token)), "Authorization", "apiToken="}
	out := inst.Stdout()
	for _, s := range forbidden {
		if strings.Contains(out, s) {
			t.Errorf("stdout contains %q", s)
		}
	}
	if len(inst.Logs("request")) < 6 {
		t.Fatalf("debug access lines missing:\n%s", out)
	}
	if len(inst.Logs("api token is shorter than 32 characters")) != 1 {
		t.Fatal("no warning for a 15-character token")
	}
	// Two failures within a few milliseconds: the first is logged, the
	// second held back (failure lines are rate-limited; the metric counts both).
	failures := inst.Logs("authentication failed")
	if len(failures) != 1 {
		t.Fatalf("want 1 authentication failure line, got %d", len(failures))
	}
	for _, f := range failures {
		if f["level"] != "WARN" || f["route"] != "/api/v1/verify-api-token" || f["method"] != "POST" || f["remoteAddr"] == nil {
			t.Fatalf("authentication failed entry: %v", f)
		}
	}
}
