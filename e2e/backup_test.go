package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// signingKey is the Ed25519 key of the worked example of docs/api.md §2.7.
const signingKey = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n-----END PRIVATE KEY-----\n"

// variedEvents writes n events over many subjects: trace fields, non-ASCII
// and HTML-escaped data, big numbers; and registers a schema.
func variedEvents(t *testing.T, inst *harness.Instance, n int) {
	t.Helper()
	if r := inst.Do("POST", "/api/v1/register-event-schema", harness.Token,
		`{"eventType":"io.example.registered","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`); r.StatusCode != 200 {
		t.Fatalf("register a schema: %d %s", r.StatusCode, r.Body)
	}
	for done := 0; done < n; done += 500 {
		var parts []string
		for i := done; i < done+500 && i < n; i++ {
			trace := ""
			if i%5 == 0 {
				trace = `"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"rojo=00f067aa0ba902b7",`
			}
			parts = append(parts, fmt.Sprintf(`{"source":"https://x.example","subject":"/books/%d/copies/%d",%s"type":"io.example.registered","data":{"n":%d,"title":"Grüße <&> 日本","big":123456789012345678901234}}`,
				i%97, i%7, trace, i))
		}
		mustWrite(t, inst, `{"events":[`+strings.Join(parts, ",")+`]}`)
	}
}

// runBackup runs eventstore backup against inst into a new file.
func runBackup(t *testing.T, inst *harness.Instance, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.ndjson")
	tokenFile := harness.WriteFile(t, dir, "token", harness.Token)
	code, stdout, stderr := harness.Run(t, bin, time.Minute, append([]string{"backup", "--url", inst.URL("http"), "--token-file", tokenFile, "-o", out}, extra...)...)
	if code != 0 || !strings.Contains(stdout, "eventstore: backed up") {
		t.Fatalf("eventstore backup: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	return out
}

// allEvents reads every event of inst as read-events sends it.
func allEvents(t *testing.T, inst *harness.Instance) string {
	t.Helper()
	return string(inst.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":"/","options":{"recursive":true}}`).Body)
}

func TestBackupAndRestoreRoundTrip(t *testing.T) {
	key := harness.WriteFile(t, t.TempDir(), "signing.pem", signingKey)
	source := harness.Start(t, bin, harness.Dev("--signing-key-file="+key)...)
	variedEvents(t, source, 3000)
	file := runBackup(t, source)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 3001 || !strings.HasPrefix(lines[3000], `{"type":"schema","payload":{"eventType":"io.example.registered","schema":`) {
		t.Fatalf("the backup has %d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	want := allEvents(t, source)

	// Offline, into a new data directory.
	dir := filepath.Join(t.TempDir(), "data")
	code, stdout, stderr := harness.Run(t, bin, time.Minute, "restore", "--data-directory", dir, file)
	if code != 0 || !strings.Contains(stdout, "restored 3000 events and 1 schemas") {
		t.Fatalf("eventstore restore: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if code, out, _ := harness.Run(t, bin, time.Minute, "verify", "--data-directory", dir); code != 0 {
		t.Fatalf("verify after the restore: %s", out)
	}
	offline := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false",
		"--http-port=0", "--signing-key-file="+key)
	if got := allEvents(t, offline); got != want {
		t.Fatal("the events restored offline differ from the backed up ones")
	}

	// Online, into a running service.
	online := harness.Start(t, bin, harness.Dev("--signing-key-file="+key)...)
	body, _ := os.Open(file)
	defer body.Close()
	r := online.DoReader("POST", "/api/v1/restore", harness.Token, body)
	if r.StatusCode != 200 || !strings.Contains(string(r.Body), `{"events":3000,"schemas":1,"headHash":"`) {
		t.Fatalf("POST /api/v1/restore: %d %s", r.StatusCode, r.Body)
	}
	if got := allEvents(t, online); got != want {
		t.Fatal("the events restored online differ from the backed up ones")
	}
	// New writes continue the chain, and the schema is enforced.
	next := mustWrite(t, online, candidates("/after", "io.example.other"))
	if next[0].ID != "3000" {
		t.Fatalf("the next write got id %s", next[0].ID)
	}
	checkError(t, online.Do("POST", "/api/v1/write-events", harness.Token,
		`{"events":[{"source":"https://x","subject":"/a","type":"io.example.registered","data":{}}]}`), 409,
		"schema conflict: event candidate does not match schema: missing properties: 'n'")
	checkError(t, online.Do("POST", "/api/v1/restore", harness.Token, lines[0]+"\n"), 409, "state conflict: the store is not empty")
}

func TestBackupIsConsistentUnderWrites(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	variedEvents(t, inst, 2000)
	ws := startWriters(16, "/load", func() string { return inst.URL("http") }, map[string]string{})
	time.Sleep(200 * time.Millisecond)
	file := runBackup(t, inst, "--without-schemas")
	ws.stop()
	raw, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if ws.acknowledged() == 0 || len(lines) <= 2000 {
		t.Fatalf("%d lines backed up beside %d concurrent writes", len(lines), ws.acknowledged())
	}
	// Every line proves itself: a restore takes exactly the backup.
	target := harness.Start(t, bin, harness.Dev()...)
	r := target.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(string(raw)))
	if r.StatusCode != 200 || !strings.Contains(string(r.Body), fmt.Sprintf(`{"events":%d,"schemas":0,`, len(lines))) {
		t.Fatalf("restore of the backup taken under writes: %d %s", r.StatusCode, r.Body)
	}
}

func TestRestoreRefusesBadBackups(t *testing.T) {
	source := harness.Start(t, bin, harness.Dev()...)
	variedEvents(t, source, 40)
	raw, _ := os.ReadFile(runBackup(t, source))
	lines := strings.SplitAfter(strings.TrimSuffix(string(raw), "\n"), "\n")
	lines[len(lines)-1] += "\n"
	join := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return strings.Join(all, "")
	}
	flipped := strings.Replace(lines[9], `"n":9,`, `"n":8,`, 1)
	unlinked := strings.Replace(lines[12], `"predecessorhash":"`, `"predecessorhash":"0`, 1)
	target := harness.Start(t, bin, harness.Dev()...)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"a changed byte in data", join(lines[:9], []string{flipped}, lines[10:]), "invalid backup: line 10: hash .* does not match the event, whose hash is "},
		{"a broken link", join(lines[:12], []string{unlinked}, lines[13:]), "invalid backup: line 13: predecessorhash 0.* is not the hash .* of the event before"},
		{"a missing line", join(lines[:20], lines[21:]), "invalid backup: line 21: event 21 where event 20 was due"},
		{"lines in another order", join(lines[:5], []string{lines[6], lines[5]}, lines[7:]), "invalid backup: line 6: event 6 where event 5 was due"},
		{"an error line", join(lines[:30], []string{`{"type":"error","payload":{"error":"internal error: storage read failed"}}` + "\n"}), "invalid backup: line 31: an error line"},
		{"a cut-off file", join(lines)[:len(join(lines))-30], "invalid backup: line 41: the line is cut off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := target.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(tc.body))
			if r.StatusCode != 400 || !regexp.MustCompile("^"+tc.want).Match(r.Body) {
				t.Fatalf("restore: %d %q, want 400 %q…", r.StatusCode, r.Body, tc.want)
			}
			if got := allEvents(t, target); got != "" {
				t.Fatalf("a refused restore left events behind: %.200s", got)
			}
		})
	}
	// The store is still empty and takes a good backup.
	if r := target.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(join(lines))); r.StatusCode != 200 {
		t.Fatalf("the good backup after refused ones: %d %s", r.StatusCode, r.Body)
	}
}

func TestRestoreHoldsOtherRequests(t *testing.T) {
	source := harness.Start(t, bin, harness.Dev()...)
	variedEvents(t, source, 20)
	raw, _ := os.ReadFile(runBackup(t, source))
	target := harness.Start(t, bin, harness.Dev()...)
	body, upload := io.Pipe()
	done := make(chan harness.Response, 1)
	go func() { done <- target.DoReader("POST", "/api/v1/restore", harness.Token, body) }()
	half := len(raw) / 2
	if _, err := upload.Write(raw[:half]); err != nil {
		t.Fatal(err)
	}
	// A read (which changes nothing) tells when the restore has begun.
	waitUntil(t, 5*time.Second, func() bool {
		return target.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":"/"}`).StatusCode == http.StatusServiceUnavailable
	})
	r := target.Do("POST", "/api/v1/write-events", harness.Token, candidates("/a", "io.example.x"))
	if r.StatusCode != 503 || string(r.Body) != "service unavailable: restore in progress\n" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("a write during the restore: %d %q", r.StatusCode, r.Body)
	}
	if r := target.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("ping during the restore: %d", r.StatusCode)
	}
	if r := target.Do("GET", "/api/v1/health", harness.Token, ""); r.StatusCode != 200 {
		t.Fatalf("health during the restore: %d", r.StatusCode)
	}
	checkError(t, target.Do("POST", "/api/v1/restore", harness.Token, ""), 503, "service unavailable: restore in progress")
	if _, err := upload.Write(raw[half:]); err != nil {
		t.Fatal(err)
	}
	upload.Close()
	if r := <-done; r.StatusCode != 200 {
		t.Fatalf("the restore: %d %s", r.StatusCode, r.Body)
	}
	if got, want := allEvents(t, target), allEvents(t, source); got != want {
		t.Fatal("the restored events differ")
	}
}

// TestBackupMovesBetweenPebbleAndPostgres moves a store from Pebble to
// PostgreSQL mode and back with backup and restore (offline and online):
// every node reads the same events byte for byte, signatures included, the
// schemas keep their registration order, and a backup of the moved store
// is the very file it came from.
func TestBackupMovesBetweenPebbleAndPostgres(t *testing.T) {
	key := harness.WriteFile(t, t.TempDir(), "signing.pem", signingKey)
	source := harness.Start(t, bin, harness.Dev("--signing-key-file="+key)...)
	variedEvents(t, source, 3000)
	// A second schema, alphabetically before the first: backups list them
	// in registration order.
	if r := source.Do("POST", "/api/v1/register-event-schema", harness.Token,
		`{"eventType":"io.example.a-later","schema":{"type":"object","properties":{}}}`); r.StatusCode != 200 {
		t.Fatalf("register a schema: %d %s", r.StatusCode, r.Body)
	}
	file := runBackup(t, source)
	original, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := allEvents(t, source)

	// Offline into an empty database, then three nodes on it.
	url := pg.Database(t)
	code, stdout, stderr := harness.Run(t, bin, time.Minute, "restore", "--postgres-url", url, file)
	if code != 0 || !strings.Contains(stdout, "restored 3000 events and 2 schemas") {
		t.Fatalf("eventstore restore --postgres-url: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if code, out, errOut := harness.Run(t, bin, time.Minute, "verify", "--postgres-url", url); code != 0 {
		t.Fatalf("verify after the restore: %s %s", out, errOut)
	}
	cluster := harness.StartCluster(t, bin, 3, harness.Postgres(url, "--signing-key-file="+key)...)
	for i, node := range cluster.Nodes() {
		if got := allEvents(t, node); got != want {
			t.Fatalf("node %d reads other events than the Pebble store held", i)
		}
	}
	moved, err := os.ReadFile(runBackup(t, cluster.Nodes()[1]))
	if err != nil {
		t.Fatal(err)
	}
	if string(moved) != string(original) {
		t.Fatal("the backup of the PostgreSQL store differs from the Pebble backup it was restored from")
	}
	next := mustWrite(t, cluster, candidates("/after", "io.example.other"))
	if next[0].ID != "3000" {
		t.Fatalf("the next write got id %s", next[0].ID)
	}

	// Online into a node on another empty database.
	online := startPostgres(t, 1, "--signing-key-file="+key).Nodes()[0]
	body, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	if r := online.DoReader("POST", "/api/v1/restore", harness.Token, body); r.StatusCode != 200 ||
		!strings.Contains(string(r.Body), `{"events":3000,"schemas":2,"headHash":"`) {
		t.Fatalf("POST /api/v1/restore on PostgreSQL: %d %s", r.StatusCode, r.Body)
	}
	if got := allEvents(t, online); got != want {
		t.Fatal("the events restored online into PostgreSQL differ from the backed up ones")
	}

	// And back to Pebble, offline.
	dir := filepath.Join(t.TempDir(), "data")
	if code, out, errOut := harness.Run(t, bin, time.Minute, "restore", "--data-directory", dir, runBackup(t, online)); code != 0 {
		t.Fatalf("eventstore restore --data-directory: %s %s", out, errOut)
	}
	back := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false",
		"--http-port=0", "--signing-key-file="+key)
	if got := allEvents(t, back); got != want {
		t.Fatal("the events moved back to Pebble differ from the original ones")
	}
}
