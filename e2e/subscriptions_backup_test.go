package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestSubscriptionsInBackups: a backup asked for them carries the
// subscriptions with their positions after the schemas; a restore, online
// or offline, brings them back, and consumers go on after the positions.
func TestSubscriptionsInBackups(t *testing.T) {
	source := harness.Start(t, bin, harness.Dev()...)
	variedEvents(t, source, 600) // 97 subjects /books/<n>/copies/<m>, one schema
	for _, body := range []string{
		`{"subscription":"billing","subject":"/books","options":{"recursive":true,"partitions":4,"maxInFlight":50}}`,
		`{"subscription":"audit","subject":"/books/3","options":{"recursive":true,"eventTypes":["io.example.registered"],"start":{"afterEventId":"100"},"acknowledgeTimeout":"1m"}}`,
	} {
		if r := source.Do("POST", "/api/v1/create-subscription", harness.Token, body); r.StatusCode != 200 {
			t.Fatalf("create: %d %s", r.StatusCode, r.Body)
		}
	}
	w := consume(t, source, "billing", "w1")
	ds := w.deliveries(t, 120)
	if r := source.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(ds[:90])+`}`); r.StatusCode != 200 {
		t.Fatalf("acknowledge: %d %s", r.StatusCode, r.Body)
	}
	w.cancel()
	before := map[string]map[string]any{"billing": subscriptionOf(t, source, "billing"), "audit": subscriptionOf(t, source, "audit")}

	plain, _ := os.ReadFile(runBackup(t, source))
	if strings.Contains(string(plain), `"type":"subscription"`) {
		t.Fatal("a backup not asked for them holds subscription lines")
	}
	file := runBackup(t, source, "--with-subscriptions")
	raw, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 603 || !strings.HasPrefix(lines[600], `{"type":"schema"`) ||
		!strings.HasPrefix(lines[601], `{"type":"subscription","payload":{"subscription":"audit","subject":"/books/3","options":{"recursive":true,"eventTypes":["io.example.registered"],"start":{"afterEventId":"100"},"partitions":1,"maxInFlight":100,"acknowledgeTimeout":"1m0s","maxDeliveries":10},"partitions":[{"partition":0,"position":"100"}]}}`) ||
		!strings.HasPrefix(lines[602], `{"type":"subscription","payload":{"subscription":"billing",`) {
		t.Fatalf("the backup's last lines:\n%s", strings.Join(lines[599:], "\n"))
	}

	// Same definitions and positions, nothing in flight, a new epoch for the next consumer.
	same := func(t *testing.T, target harness.Target) {
		t.Helper()
		for name, was := range before {
			got := subscriptionOf(t, target, name)
			if !reflect.DeepEqual(got["options"], was["options"]) || got["subject"] != was["subject"] || got["inFlight"] != float64(0) {
				t.Fatalf("%s restored as %v, was %v", name, got, was)
			}
			for i, p := range got["partitions"].([]any) {
				if p.(map[string]any)["position"] != was["partitions"].([]any)[i].(map[string]any)["position"] {
					t.Fatalf("%s partition %d restored as %v, was %v", name, i, p, was["partitions"].([]any)[i])
				}
			}
		}
	}
	online := harness.Start(t, bin, harness.Dev()...)
	body, _ := os.Open(file)
	defer body.Close()
	if r := online.DoReader("POST", "/api/v1/restore", harness.Token, body); r.StatusCode != 200 || !strings.HasPrefix(string(r.Body), `{"events":600,"schemas":1,"headHash":"`) {
		t.Fatalf("POST /api/v1/restore: %d %s", r.StatusCode, r.Body)
	}
	same(t, online)
	// Restored through one node of a PostgreSQL-mode cluster, they are every node's.
	nodes := startPostgres3(t).Nodes()
	pgBody, _ := os.Open(file)
	defer pgBody.Close()
	if r := nodes[0].DoReader("POST", "/api/v1/restore", harness.Token, pgBody); r.StatusCode != 200 {
		t.Fatalf("POST /api/v1/restore in PostgreSQL mode: %d %s", r.StatusCode, r.Body)
	}
	for _, node := range nodes {
		same(t, node)
	}
	// The consumer goes on after the positions: every event not acknowledged, none that was.
	acked := map[string]bool{}
	for _, d := range ds[:90] {
		var e struct{ ID string }
		_ = json.Unmarshal(d.Event, &e)
		acked[e.ID] = true
	}
	// The acknowledged deliveries were a prefix of each partition's (sent in
	// id order), so the positions cover them: the rest comes, once each.
	c := consume(t, online, "billing", "w1")
	for got := 0; got < 600-90; {
		batch := c.deliveries(t, min(50, 600-90-got))
		for _, d := range batch {
			var e struct{ ID string }
			_ = json.Unmarshal(d.Event, &e)
			if acked[e.ID] {
				t.Fatalf("event %s, acknowledged before the backup, delivered after the restore", e.ID)
			}
			acked[e.ID] = true
		}
		online.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(batch)+`}`)
		got += len(batch)
	}
	if info := subscriptionOf(t, online, "billing"); info["lag"] != float64(0) || info["inFlight"] != float64(0) {
		t.Fatalf("after every event was settled: %v", info)
	}
	c.cancel()

	dir := filepath.Join(t.TempDir(), "data")
	code, stdout, stderr := harness.Run(t, bin, time.Minute, "restore", "--data-directory", dir, file)
	if code != 0 || !strings.Contains(stdout, "restored 600 events, 1 schemas and 2 subscriptions") {
		t.Fatalf("eventstore restore: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	offline := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory="+dir, "--http-enabled", "--https-enabled=false", "--http-port=0")
	same(t, offline)

	// More subscriptions than the target takes are refused.
	small := harness.Start(t, bin, harness.Dev("--max-subscriptions=1")...)
	checkError(t, small.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(string(raw))), 400,
		"invalid backup: line 603: too many subscriptions (the limit is 1)")

	// A subscription line before the last event line is refused, and nothing stays.
	target := harness.Start(t, bin, harness.Dev()...)
	moved := append(append(append([]string{}, lines[:599]...), lines[601], lines[599]), lines[600])
	checkError(t, target.DoReader("POST", "/api/v1/restore", harness.Token, strings.NewReader(strings.Join(moved, "\n")+"\n")), 400,
		"invalid backup: line 601: an event after the subscriptions")
	if got := stream(t, target, "/api/v1/read-subscriptions", `{}`); len(got) != 0 {
		t.Fatalf("a refused restore left subscriptions: %v", got)
	}
}
