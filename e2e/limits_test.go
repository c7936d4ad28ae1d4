package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// expectRefused checks a 503 refusal of an admission limit.
func expectRefused(t *testing.T, r harness.Response, what string) {
	t.Helper()
	if r.StatusCode != 503 || string(r.Body) != "service unavailable: too many "+what+"\n" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("past the limit of %s: %d %q Retry-After %q", what, r.StatusCode, r.Body, r.Header.Get("Retry-After"))
	}
}

func TestMaxQueries(t *testing.T) {
	inst, _ := eventqlInstance(t, startPebble, "--max-queries=1")
	conn, br := openQuery(t, inst, slowQuery)
	if line := chunkLine(t, conn, br, 3*time.Second); !strings.Contains(line, "heartbeat") {
		t.Fatalf("first line of the running query: %q", line)
	}
	expectRefused(t, inst.Do("POST", queryPath, harness.Token, queryBody("FROM e IN events PROJECT INTO COUNT()")), "queries")
	// Streams are not queries.
	if r := inst.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":"/","options":{"recursive":true}}`); r.StatusCode != 200 {
		t.Fatalf("read-events beside a running query: %d", r.StatusCode)
	}
	conn.Close() // the running query ends; the next one is admitted
	waitUntil(t, 5*time.Second, func() bool {
		return inst.Do("POST", queryPath, harness.Token, queryBody("FROM e IN events PROJECT INTO COUNT()")).StatusCode == 200
	})
	if got := metrics(t, inst)["eventstore_eventql_queries_running"]; got != 0 {
		t.Fatalf("eventstore_eventql_queries_running %v after the queries ended", got)
	}
}

func TestMaxStreams(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--max-streams=2")...)
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	first := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
	first.events(t, 1, 5*time.Second)
	second := observe(t, inst, `{"subject":"/a"}`)
	second.events(t, 1, 5*time.Second)
	if got := metrics(t, inst)["eventstore_streams"]; got != 2 {
		t.Fatalf("eventstore_streams %v with two observers", got)
	}
	for _, path := range []string{"/api/v1/read-events", "/api/v1/observe-events", "/api/v1/read-subjects", "/api/v1/read-event-types"} {
		expectRefused(t, inst.Do("POST", path, harness.Token, `{"subject":"/"}`), "streams")
	}
	// Writes and queries go on; the open streams were not disturbed.
	mustWrite(t, inst, candidates("/a", "io.example.x"))
	first.events(t, 1, 5*time.Second)
	if r := inst.Do("POST", queryPath, harness.Token, queryBody("FROM e IN events PROJECT INTO COUNT()")); r.StatusCode != 200 {
		t.Fatalf("a query beside full streams: %d", r.StatusCode)
	}
}

func TestQueryTimeout(t *testing.T) {
	inst, _ := eventqlInstance(t, startPebble, "--eventql-query-timeout=1500ms")
	conn, br := openQuery(t, inst, slowQuery)
	defer conn.Close()
	start := time.Now()
	for {
		line := chunkLine(t, conn, br, 5*time.Second)
		if strings.Contains(line, "heartbeat") {
			continue
		}
		if line != `{"type":"error","payload":{"error":"query failed: time limit of 1.5s exceeded"}}`+"\n" {
			t.Fatalf("last line %q", line)
		}
		break
	}
	if took := time.Since(start); took < 1400*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the query ended after %v with a 1.5 s limit", took)
	}
}
