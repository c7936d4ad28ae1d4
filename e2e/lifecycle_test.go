package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// waitForStatus polls path until it answers status, and returns that response.
func waitForStatus(t *testing.T, inst *harness.Instance, path, token string, status int, within time.Duration) harness.Response {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := inst.Do("GET", path, token, "")
		if r.StatusCode == status {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers %d after %s, want %d", path, r.StatusCode, within, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGracefulShutdown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			inst := harness.Start(t, bin, harness.Dev("--shutdown-drain-period=2s")...)
			dataDir := inst.Logs("eventstore is running")[0]["dataDirectory"].(string)
			if _, err := os.Stat(dataDir); err != nil {
				t.Fatalf("temporary data directory missing while running: %v", err)
			}
			if r := inst.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
				t.Fatalf("ping while running: %d", r.StatusCode)
			}

			inst.Signal(sig)
			shutting := inst.WaitForLog("shutting down", 5*time.Second)
			wantName := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]
			if shutting["signal"] != wantName || shutting["drainPeriod"] != "2s" {
				t.Fatalf("shutting down entry: %v", shutting)
			}
			// During the drain: listeners still accept, every answer is 503.
			checkError(t, waitForStatus(t, inst, "/api/v1/ping", "", 503, time.Second), 503, "service unavailable: shutting down")
			health := inst.Do("GET", "/api/v1/health", harness.Token, "")
			var report map[string]any
			if err := json.Unmarshal(health.Body, &report); err != nil || health.StatusCode != 503 ||
				health.Header.Get("Content-Type") != "application/health+json" || report["status"] != "fail" || report["output"] != "shutting down" {
				t.Fatalf("health while shutting down: %d %s", health.StatusCode, health.Body)
			}
			checkError(t, inst.Do("GET", "/api/v1/health", "", ""), 401, "unauthorized")
			checkError(t, inst.Do("POST", "/api/v1/verify-api-token", "", ""), 401, "unauthorized")
			checkError(t, inst.Do("POST", "/api/v1/verify-api-token", harness.Token, ""), 503, "service unavailable: shutting down")
			if inst.Exited() {
				t.Fatal("process exited before the drain period ended")
			}

			if code := inst.Wait(10 * time.Second); code != 0 {
				t.Fatalf("exit code %d, want 0; stdout:\n%s", code, inst.Stdout())
			}
			stopped := inst.Logs("stopped")
			if len(stopped) != 1 || stopped[0]["exitCode"] != float64(0) {
				t.Fatalf("stopped entries: %v", stopped)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Fatalf("temporary data directory %s still exists after shutdown: %v", dataDir, err)
			}
			if _, err := net.DialTimeout("tcp", strings.TrimPrefix(inst.URL("http"), "http://"), time.Second); err == nil {
				t.Fatal("listener still accepts connections after exit")
			}
		})
	}
}

func TestSecondSignalForcesExit(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--shutdown-drain-period=1m")...)
	inst.Signal(syscall.SIGINT)
	inst.WaitForLog("shutting down", 5*time.Second)
	waitForStatus(t, inst, "/api/v1/ping", "", 503, time.Second)

	start := time.Now()
	inst.Signal(syscall.SIGINT)
	if code := inst.Wait(5 * time.Second); code != 130 {
		t.Fatalf("exit code %d after a second SIGINT, want 130", code)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("forced exit took %s", took)
	}
	fatal := inst.Logs("second signal received, forcing exit")
	if len(fatal) != 1 || fatal[0]["level"] != "FATAL" || fatal[0]["signal"] != "SIGINT" {
		t.Fatalf("FATAL entries: %v", fatal)
	}
	if len(inst.Logs("stopped")) != 0 {
		t.Fatal("a forced exit logged stopped")
	}
}

// TestSIGHUPReloads: SIGHUP reads the tokens again (with --api-token
// there is nothing to read) and stops nothing.
func TestSIGHUPReloads(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	inst.Signal(syscall.SIGHUP)
	inst.WaitForLog("reloading", 5*time.Second)
	if r := inst.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("ping after SIGHUP: %d", r.StatusCode)
	}
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

func TestDefaultHTTPPort(t *testing.T) {
	if ln, err := net.Listen("tcp", ":3000"); err != nil {
		t.Fatalf("port 3000 is taken on this machine, the default port cannot be tested: %v", err)
	} else {
		ln.Close()
	}
	inst := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory-temporary", "--http-enabled", "--https-enabled=false")
	if got := inst.Listeners(); len(got) != 1 || got[0] != "http://0.0.0.0:3000" {
		t.Fatalf("listeners %v, want [http://0.0.0.0:3000]", got)
	}
	if r := inst.DoURL("GET", "http://127.0.0.1:3000/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("ping on port 3000: %d", r.StatusCode)
	}
	inst.Signal(syscall.SIGTERM)
	inst.Wait(10 * time.Second)
}

func TestPersistentDataDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	serviceID := func(inst *harness.Instance) string {
		var report map[string]any
		if err := json.Unmarshal(inst.Do("GET", "/api/v1/health", harness.Token, "").Body, &report); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(report["serviceId"])
	}

	first := harness.Start(t, bin, args...)
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data directory not created 0700: %v %v", info, err)
	}
	running := first.Logs("eventstore is running")[0]
	if running["dataDirectory"] != dir || running["temporary"] != false {
		t.Fatalf("running entry: %v", running)
	}
	id := serviceID(first)

	// A second process on the same directory fails to start, and so does
	// an offline verification.
	code, _, _ := harness.Run(t, bin, 30*time.Second, args...)
	if code != 1 {
		t.Fatalf("second process on a locked data directory exited %d, want 1", code)
	}
	code, _, stderr := harness.Run(t, bin, 30*time.Second, "verify", "--data-directory="+dir)
	if code != 1 || !strings.Contains(stderr, "in use by another process") {
		t.Fatalf("verify of a directory in use: exit %d, %q", code, stderr)
	}

	first.Signal(syscall.SIGTERM)
	if code := first.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("persistent data directory removed: %v", err)
	}
	code, stdout, _ := harness.Run(t, bin, 30*time.Second, "verify", "--data-directory="+dir)
	if code != 0 || !strings.Contains(stdout, "verified 0 events") {
		t.Fatalf("verify of an empty store: exit %d, %q", code, stdout)
	}
	code, _, stderr = harness.Run(t, bin, 30*time.Second, "verify", "--data-directory="+filepath.Join(dir, "missing"))
	if code != 2 || !strings.Contains(stderr, "is not a directory") {
		t.Fatalf("verify of a missing directory: exit %d, %q", code, stderr)
	}
	second := harness.Start(t, bin, args...)
	if got := serviceID(second); got != id {
		t.Fatalf("serviceId changed across restarts: %s then %s", id, got)
	}
}

func TestStartupFailure(t *testing.T) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	inst := harness.Launch(t, bin, "run", "--api-token="+harness.Token, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", fmt.Sprintf("--http-port=%d", port))
	if code := inst.Wait(30 * time.Second); code != 1 {
		t.Fatalf("exit code %d with the port taken, want 1", code)
	}
	failed := inst.Logs("startup failed")
	if len(failed) != 1 || failed[0]["level"] != "ERROR" || !strings.Contains(fmt.Sprint(failed[0]["error"]), "address already in use") {
		t.Fatalf("startup failed entries: %v\n%s", failed, inst.Stdout())
	}
	if len(inst.Logs("eventstore is running")) != 0 {
		t.Fatal("announced running although the start failed")
	}
}
