package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// goldenDir is the data directory the first release wrote (format version 1,
// see its README).
const goldenDir = "../modules/storage/testdata/golden-v1"

// goldenCopy returns a copy of the golden data directory.
func goldenCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(goldenDir, "data"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runVerify runs `eventstore verify` on dir and returns its exit code and output.
func runVerify(t *testing.T, dir string) (int, string) {
	t.Helper()
	code, stdout, stderr := harness.Run(t, bin, 60*time.Second, "verify", "--data-directory="+dir)
	return code, stdout + stderr
}

// TestGoldenDataDirectory checks that the current binary takes over a data
// directory of the first release: verify passes (reading format version 1
// as it is), the events read back byte for byte, the directory is migrated
// to format version 2, its schemas still hold, and new events continue the
// chain.
func TestGoldenDataDirectory(t *testing.T) {
	dir := goldenCopy(t)
	if code, out := runVerify(t, dir); code != 0 || !strings.Contains(out, "verified 28 events") {
		t.Fatalf("verify of the golden directory: exit %d, %s", code, out)
	}
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	want, err := os.ReadFile(filepath.Join(goldenDir, "read-events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	r := inst.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":"/","options":{"recursive":true}}`)
	if r.StatusCode != 200 || !bytes.Equal(r.Body, want) {
		t.Fatalf("read-events of the golden directory: %d\n%s\nwant\n%s", r.StatusCode, r.Body, want)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "format-version")); err != nil || string(raw) != "2\n" {
		t.Fatalf("format-version after the first start: %q %v", raw, err)
	}
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token,
		`{"events":[{"source":"https://x","subject":"/new","type":"io.example.library.book-acquired","data":{"title":"t"}}]}`), 409,
		"schema conflict: event candidate does not match schema: missing properties: 'author'")
	lines := streamLines(t, r, "read-events")
	last := parseEvent(t, lines[len(lines)-1].Payload)
	added := mustWrite(t, inst, candidates("/books/42", "io.example.library.book-borrowed", "/new", "io.example.library.new"))
	if added[0].ID != "28" || added[0].PredecessorHash != last.Hash || added[1].PredecessorHash != added[0].Hash {
		t.Fatalf("new events do not continue the chain of %s: %s %s", last.Hash, added[0].raw, added[1].raw)
	}
	if added[0].Time <= last.Time {
		t.Fatalf("new event at %s, not after the last golden event at %s", added[0].Time, last.Time)
	}
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if code, out := runVerify(t, dir); code != 0 || !strings.Contains(out, "verified 30 events") {
		t.Fatalf("verify after new writes: exit %d, %s", code, out)
	}
}

// TestNewerFormatVersionRefused checks that neither run nor verify opens a
// data directory of a format version newer than the binary's.
func TestNewerFormatVersionRefused(t *testing.T) {
	dir := goldenCopy(t)
	harness.WriteFile(t, dir, "format-version", "3\n")
	const message = "data directory has format version 3, newer than format version 2 of this binary"
	inst := harness.Launch(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false", "--http-port=0")
	if code := inst.Wait(30 * time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	failed := inst.Logs("startup failed")
	if len(failed) != 1 || !strings.Contains(fmt.Sprint(failed[0]["error"]), message) {
		t.Fatalf("startup failed entries %v, want one with %q\n%s", failed, message, inst.Stdout())
	}
	if code, out := runVerify(t, dir); code != 1 || !strings.Contains(out, message) {
		t.Fatalf("verify: exit %d, %s", code, out)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "format-version")); string(raw) != "3\n" {
		t.Fatalf("format-version changed to %q", raw)
	}
}
