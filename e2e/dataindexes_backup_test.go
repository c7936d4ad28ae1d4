package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestDataIndexesInBackups: a backup asked for them carries the data
// indexes' definitions after the schemas; a restore, online (on one node
// and through one of three PostgreSQL nodes) or offline, registers them
// and builds them before it answers, so they serve the first query.
func TestDataIndexesInBackups(t *testing.T) {
	source := harness.Start(t, bin, harness.Dev()...)
	mustWrite(t, source, taggedEvents(0, 2_100))
	for _, body := range []string{
		`{"name":"reader","path":"/reader","eventTypes":["io.example.tagged"]}`,
		`{"name":"tags","path":"/tags"}`,
	} {
		if r := source.Do("POST", "/api/v1/register-data-index", harness.Token, body); r.StatusCode != 200 {
			t.Fatalf("register: %d %s", r.StatusCode, r.Body)
		}
	}
	waitUntil(t, 30*time.Second, func() bool {
		x := dataIndexes(t, source)
		return x["reader"].State == "ready" && x["tags"].State == "ready"
	})

	plain, _ := os.ReadFile(runBackup(t, source))
	if strings.Contains(string(plain), `"type":"dataIndex"`) {
		t.Fatal("a backup not asked for them holds data index lines")
	}
	file := runBackup(t, source, "--with-data-indexes")
	raw, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 2_102 ||
		lines[2_100] != `{"type":"dataIndex","payload":{"name":"reader","path":"/reader","eventTypes":["io.example.tagged"]}}` ||
		lines[2_101] != `{"type":"dataIndex","payload":{"name":"tags","path":"/tags"}}` {
		t.Fatalf("the backup's last lines:\n%s", strings.Join(lines[2_099:], "\n"))
	}

	// Ready as the restore answers, they serve a decision at the cost of
	// what it reads; verify-store finds their keys those of the events.
	const counter = `eventstore_events_read_total{operation="run-eventql-query"}`
	const decision = `FROM e IN events WHERE e.type == "io.example.tagged" AND e.data.reader == "/readers/3" PROJECT INTO COUNT()`
	served := func(t *testing.T, inst harness.Target) {
		t.Helper()
		for name, x := range dataIndexes(t, inst) {
			if x.State != "ready" || x.IndexedEvents != 2_100 {
				t.Fatalf("index %s restored as %+v", name, x)
			}
		}
		before := metrics(t, inst)[counter]
		if res := runQuery(t, inst, decision); res.status != 200 || len(res.rows) != 1 || res.rows[0] != float64(300) {
			t.Fatalf("%s: %+v", decision, res)
		}
		if loaded := metrics(t, inst)[counter] - before; loaded != 300 {
			t.Fatalf("the decision loaded %v events, want the reader's 300", loaded)
		}
	}
	online := harness.Start(t, bin, harness.Dev()...)
	body, _ := os.Open(file)
	defer body.Close()
	if r := online.DoReader("POST", "/api/v1/restore", harness.Token, body); r.StatusCode != 200 || !strings.HasPrefix(string(r.Body), `{"events":2100,"schemas":0,"headHash":"`) {
		t.Fatalf("POST /api/v1/restore: %d %s", r.StatusCode, r.Body)
	}
	served(t, online)
	verified := stream(t, online, "/api/v1/verify-store", `{}`)
	if last := verified[len(verified)-1]; last.Type != "verification" || !strings.Contains(string(last.Payload), `"verified":true`) {
		t.Fatalf("verify-store after the restore: %s %s", last.Type, last.Payload)
	}

	nodes := startPostgres3(t).Nodes()
	pgBody, _ := os.Open(file)
	defer pgBody.Close()
	if r := nodes[0].DoReader("POST", "/api/v1/restore", harness.Token, pgBody); r.StatusCode != 200 {
		t.Fatalf("POST /api/v1/restore in PostgreSQL mode: %d %s", r.StatusCode, r.Body)
	}
	for _, node := range nodes {
		served(t, node)
	}

	dir := filepath.Join(t.TempDir(), "data")
	code, stdout, stderr := harness.Run(t, bin, time.Minute, "restore", "--data-directory", dir, file)
	if code != 0 || !strings.Contains(stdout, "restored 2100 events, 0 schemas and 2 data indexes") {
		t.Fatalf("eventstore restore: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	served(t, harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false", "--http-port=0"))

	// More indexes than the target takes are refused, and nothing stays.
	small := harness.Start(t, bin, harness.Dev("--max-data-indexes=1")...)
	checkError(t, small.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(string(raw))), 400,
		"invalid backup: line 2102: too many data indexes")
	if got := dataIndexes(t, small); len(got) != 0 {
		t.Fatalf("a refused restore left data indexes: %v", got)
	}
}
