package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// downloadStatus is the answer of read-download (docs/api.md §4.12a).
type downloadStatus struct {
	State, Route, Filename, LastEventHash, Error string
	Status                                       int
	Bytes                                        int64
	Lines                                        map[string]int64
	Headers                                      map[string]string
}

// createDownload asks for a ticket of route with body and returns its URL.
func createDownload(t *testing.T, inst *harness.Instance, token, route, body string) (ticket, url string) {
	t.Helper()
	r := inst.Do("POST", "/api/v1/create-download", token, `{"route":"`+route+`","body":`+body+`}`)
	if r.StatusCode != 200 {
		t.Fatalf("create-download %s: %d %s", route, r.StatusCode, r.Body)
	}
	var created struct{ Ticket, URL string }
	if err := json.Unmarshal(r.Body, &created); err != nil {
		t.Fatal(err)
	}
	return created.Ticket, inst.URL("http") + created.URL
}

func readDownload(t *testing.T, inst *harness.Instance, token, ticket string) downloadStatus {
	t.Helper()
	r := inst.Do("POST", "/api/v1/read-download", token, `{"ticket":"`+ticket+`"}`)
	var s downloadStatus
	if r.StatusCode != 200 || json.Unmarshal(r.Body, &s) != nil {
		t.Fatalf("read-download: %d %s", r.StatusCode, r.Body)
	}
	return s
}

// fetch GETs url without a token, as a browser's download does.
func fetchFile(t *testing.T, url string) (int, http.Header, []byte, error) {
	t.Helper()
	resp, err := harness.NewClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

// TestDownloads fetches backups and query results through download
// tickets with the tokens of an access file: the file is the route's
// answer (without heartbeats), offered as an attachment; a ticket works
// once and is never logged; the route's grants, audit line and admission
// limit hold for the download; a token revoked after the ticket was
// handed out cannot use it.
func TestDownloads(t *testing.T) {
	inst := startWithAccessFile(t)
	operator, querier, admin := accessToken("operator"), accessToken("querier"), accessToken("admin")
	if r := inst.Do("POST", "/api/v1/write-events", admin, candidates("/orders/1", lib+"book-acquired", "/orders/2", lib+"book-borrowed")); r.StatusCode != 200 {
		t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
	}

	want := inst.Do("POST", "/api/v1/backup", operator, `{}`)
	ticket, url := createDownload(t, inst, operator, "/api/v1/backup", `{}`)
	status, header, body, err := fetchFile(t, url)
	if err != nil || status != 200 || !bytes.Equal(body, want.Body) {
		t.Fatalf("backup download: %d %v, %d bytes, want the API's %d", status, err, len(body), len(want.Body))
	}
	if got := header.Get("Content-Disposition"); got != "attachment; filename=eventstore-backup.ndjson" {
		t.Errorf("Content-Disposition %q", got)
	}
	s := readDownload(t, inst, operator, ticket)
	if s.State != "done" || s.Lines["event"] != 2 || s.Headers["Eventstore-Backup-Events"] != "2" || s.LastEventHash != want.Header.Get("Eventstore-Backup-Head-Hash") || s.Bytes != int64(len(body)) {
		t.Errorf("status after the download: %+v", s)
	}
	if status, _, body, _ := fetchFile(t, url); status != 404 || string(body) != "not found: unknown download\n" {
		t.Errorf("the ticket used again: %d %q", status, body)
	}
	// The audit line is written once the route's handler returned, which
	// may be just after the client read the whole file.
	audited := func() bool {
		for _, line := range inst.Logs("request audited") {
			if line["route"] == "/api/v1/backup" && line["token"] == "operator" && line["status"] == float64(200) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(5 * time.Second); !audited() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !audited() {
		t.Error("no audit line of the downloaded backup with its token")
	}
	if strings.Contains(inst.Stdout(), ticket) {
		t.Error("the ticket is in the log")
	}

	// A query, as its rows (the querier may; the operator may not).
	if r := inst.Do("POST", "/api/v1/create-download", operator, `{"route":"/api/v1/run-eventql-query","body":{"query":"FROM e IN events PROJECT INTO e"}}`); r.StatusCode != 403 {
		t.Errorf("create-download of a query by the operator: %d", r.StatusCode)
	}
	_, url = createDownload(t, inst, querier, "/api/v1/run-eventql-query", `{"query":"FROM e IN events PROJECT INTO e.id"}`)
	if status, header, body, err := fetchFile(t, url); err != nil || status != 200 || string(body) != `{"type":"row","payload":"0"}`+"\n"+`{"type":"row","payload":"1"}`+"\n" || header.Get("Content-Disposition") != "attachment; filename=query.ndjson" {
		t.Errorf("query download: %d %v %q %q", status, err, body, header.Get("Content-Disposition"))
	}

	// A query that fails: nothing of the error in the file, which is cut off.
	ticket, url = createDownload(t, inst, admin, "/api/v1/run-eventql-query", `{"query":"FROM e IN events PROJECT INTO e.nope"}`)
	if status, _, body, err := fetchFile(t, url); status != 400 || err != nil || !strings.HasPrefix(string(body), "invalid query: ") {
		t.Errorf("download of an invalid query: %d %v %q", status, err, body)
	}
	if s := readDownload(t, inst, admin, ticket); s.State != "failed" || s.Status != 400 || !strings.HasPrefix(s.Error, "invalid query: ") {
		t.Errorf("status of the invalid query's download: %+v", s)
	}
}

// TestDownloadLimits: a download counts against the route's admission
// limit like the route asked directly, and a ticket of a token whose
// access is gone by the time it is used answers 401.
func TestDownloadLimits(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--max-streams=1")...)
	mustWrite(t, inst, candidates("/books/1", lib+"book-acquired"))
	held := liveLines(t, inst, "/api/v1/observe-events", harness.Token, `{"subject":"/","options":{"recursive":true}}`)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the observer got nothing")
	}
	ticket, url := createDownload(t, inst, harness.Token, "/api/v1/backup", `{}`)
	if status, header, body, _ := fetchFile(t, url); status != 503 || string(body) != "service unavailable: too many streams\n" || header.Get("Content-Disposition") != "" {
		t.Errorf("a download beyond --max-streams: %d %q", status, body)
	}
	if s := readDownload(t, inst, harness.Token, ticket); s.State != "failed" || s.Error != "service unavailable: too many streams" {
		t.Errorf("status: %+v", s)
	}
}

// TestDownloadRevokedToken: a ticket whose token left the access file
// before the ticket was used answers 401, and its status says so.
func TestDownloadRevokedToken(t *testing.T) {
	dir := t.TempDir()
	entry := func(name, grants string) string {
		d := sha256.Sum256([]byte(accessToken(name)))
		return fmt.Sprintf("  - name: %s\n    sha256: %s\n    grants: %s\n", name, hex.EncodeToString(d[:]), grants)
	}
	file := harness.WriteFile(t, dir, "access.yaml", "tokens:\n"+entry("admin", "{admin: true}")+entry("leaving", "{operate: true}"))
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
	ticket, url := createDownload(t, inst, accessToken("leaving"), "/api/v1/backup", `{}`)
	harness.WriteFile(t, dir, "access.yaml.new", "tokens:\n"+entry("admin", "{admin: true}"))
	if err := os.Rename(filepath.Join(dir, "access.yaml.new"), file); err != nil {
		t.Fatal(err)
	}
	inst.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); statusOf(t, inst, "POST", "/api/v1/verify-api-token", accessToken("leaving"), "") != 401; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the removed token still works 10 s after SIGHUP")
		}
	}
	if status, _, body, _ := fetchFile(t, url); status != 401 || string(body) != "unauthorized\n" {
		t.Errorf("the ticket of a removed token: %d %q", status, body)
	}
	if s := readDownload(t, inst, accessToken("admin"), ticket); s.State != "failed" || s.Status != 401 || s.Error != "unauthorized" {
		t.Errorf("status: %+v", s)
	}
}
