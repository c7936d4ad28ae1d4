package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// dataIndexLine is the payload of a read-data-indexes line.
type dataIndexLine struct {
	Name          string    `json:"name"`
	Path          string    `json:"path"`
	EventTypes    []string  `json:"eventTypes"`
	State         string    `json:"state"`
	IndexedEvents uint64    `json:"indexedEvents"`
	Events        uint64    `json:"events"`
	CreatedAt     time.Time `json:"createdAt"`
}

// dataIndexes reads the data indexes of inst.
func dataIndexes(t *testing.T, inst harness.Target) map[string]dataIndexLine {
	t.Helper()
	out := map[string]dataIndexLine{}
	for _, l := range stream(t, inst, "/api/v1/read-data-indexes", `{}`) {
		var x dataIndexLine
		if l.Type != "dataIndex" || json.Unmarshal(l.Payload, &x) != nil {
			t.Fatalf("read-data-indexes line %s %s", l.Type, l.Payload)
		}
		out[x.Name] = x
	}
	return out
}

// taggedEvents is a write-events body of n events of type io.example.tagged,
// each tagged with its number modulo 10, on subjects of 7 readers.
func taggedEvents(from, n int) string {
	var parts []string
	for i := from; i < from+n; i++ {
		parts = append(parts, fmt.Sprintf(`{"source":"https://library.example.com","subject":"/readers/%d","type":"io.example.tagged","data":{"tags":["t%d"],"reader":"/readers/%d"}}`, i%7, i%10, i%7))
	}
	return `{"events":[` + strings.Join(parts, ",") + `]}`
}

// TestDataIndexRoutes registers, reads and removes data indexes over
// HTTP, with the errors of docs/api.md §4.15, on one Pebble node and on
// three PostgreSQL nodes (each request to any of them): an index
// registered on a store that holds events is built in the background and
// becomes ready.
func TestDataIndexRoutes(t *testing.T) { eachTarget(t, testDataIndexRoutes) }

func testDataIndexRoutes(t *testing.T, start starter) {
	inst := start(t)
	post := func(path, body string, status int, want string) string {
		t.Helper()
		r := inst.Do("POST", path, harness.Token, body)
		got := strings.TrimSuffix(string(r.Body), "\n")
		if r.StatusCode != status || (want != "" && got != want) {
			t.Fatalf("%s %s: %d %q, want %d %q", path, body, r.StatusCode, got, status, want)
		}
		return got
	}
	const register = "/api/v1/register-data-index"
	for body, want := range map[string]string{
		`{"name":"a b","path":"/x"}`:                                  "invalid request: invalid name 'a b'",
		`{"path":"/x"}`:                                               "invalid request: invalid name ''",
		`{"name":"x","path":"x"}`:                                     "invalid data index: invalid path 'x'",
		`{"name":"x","path":"/a~2"}`:                                  "invalid data index: invalid path '/a~2'",
		`{"name":"x","path":"` + strings.Repeat("/a", 17) + `"}`:      "invalid data index: invalid path '" + strings.Repeat("/a", 17) + "'",
		`{"name":"x","path":"/a","eventTypes":["io.example.a","no"]}`: "invalid event type: 'no'",
		`{"name":"x","path":"/a","unknown":1}`:                        "",
	} {
		status := 400
		if want == "" {
			status = 200 // unknown members are ignored (§1.6)
		}
		post(register, body, status, want)
	}
	post("/api/v1/remove-data-index", `{"name":"x"}`, 200, `{"name":"x","removed":true}`)

	// On an empty store an index is ready at once.
	var first dataIndexLine
	if err := json.Unmarshal([]byte(post(register, `{"name":"by-reader","path":"/reader"}`, 200, "")), &first); err != nil ||
		first.State != "ready" || first.Path != "/reader" || first.EventTypes != nil || time.Since(first.CreatedAt) > time.Minute {
		t.Fatalf("registration on an empty store: %+v %v", first, err)
	}
	mustWrite(t, inst, taggedEvents(0, 2_000))
	mustWrite(t, inst, taggedEvents(2_000, 2_000))

	// On a store that holds events it is built.
	var tags dataIndexLine
	body := post(register, `{"name":"tags","path":"/tags","eventTypes":["io.example.tagged","io.example.other"]}`, 200, "")
	if err := json.Unmarshal([]byte(body), &tags); err != nil || tags.Events < 4_000 || tags.IndexedEvents > tags.Events ||
		strings.Join(tags.EventTypes, ",") != "io.example.other,io.example.tagged" {
		t.Fatalf("registration on a store of 4,000 events: %s", body)
	}
	waitUntil(t, 30*time.Second, func() bool { return dataIndexes(t, inst)["tags"].State == "ready" })
	all := dataIndexes(t, inst)
	if len(all) != 2 || all["tags"].IndexedEvents != all["tags"].Events || all["tags"].Events != 4_000 || all["by-reader"].State != "ready" {
		t.Fatalf("the indexes: %+v", all)
	}

	// The same registration again answers the index; another under the
	// name is refused.
	post(register, `{"name":"tags","path":"/tags","eventTypes":["io.example.other","io.example.tagged","io.example.tagged"]}`, 200, "")
	post(register, `{"name":"tags","path":"/other"}`, 409, "state conflict: data index 'tags' already exists")

	post("/api/v1/remove-data-index", `{"name":"tags"}`, 200, `{"name":"tags","removed":true}`)
	post("/api/v1/remove-data-index", `{"name":"tags"}`, 404, "data index 'tags' not found")
	post("/api/v1/remove-data-index", `{"name":"a/b"}`, 400, "invalid request: invalid name 'a/b'")
	if all := dataIndexes(t, inst); len(all) != 1 {
		t.Fatalf("after the removal: %+v", all)
	}
}

// TestDataIndexLimit refuses a registration beyond --max-data-indexes.
func TestDataIndexLimit(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--max-data-indexes", "1")...)
	if r := inst.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"one","path":"/a"}`); r.StatusCode != 200 {
		t.Fatalf("first: %d %s", r.StatusCode, r.Body)
	}
	if r := inst.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"two","path":"/b"}`); r.StatusCode != 409 || string(r.Body) != "too many data indexes\n" {
		t.Fatalf("second of one allowed: %d %s", r.StatusCode, r.Body)
	}
}

// TestDataIndexDecisions runs a query and write preconditions that a data
// index serves against the binary: the query loads only the events of one
// reader, as the events-read counter shows, and the preconditions decide
// on them alone, on one Pebble node and on three PostgreSQL nodes.
func TestDataIndexDecisions(t *testing.T) { eachTarget(t, testDataIndexDecisions) }

func testDataIndexDecisions(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, taggedEvents(0, 1_400))
	if r := inst.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"reader","path":"/reader","eventTypes":["io.example.tagged"]}`); r.StatusCode != 200 {
		t.Fatalf("register: %d %s", r.StatusCode, r.Body)
	}
	mustWrite(t, inst, taggedEvents(1_400, 700))
	waitUntil(t, 30*time.Second, func() bool { return dataIndexes(t, inst)["reader"].State == "ready" })

	// Every event has two keys, its reader's and the kind of its value;
	// every node reports the build of the index as done once it followed
	// the commit that ended it (the node that said ready may be ahead).
	var m map[string]float64
	waitUntil(t, 30*time.Second, func() bool {
		m = metrics(t, inst)
		return m[`eventstore_data_index_build_events{index="reader"}`] == float64(2_100*len(inst.Nodes()))
	})
	if keys := m[`eventstore_data_index_keys_total{index="reader"}`]; keys != 4_200 {
		t.Fatalf("data index metrics: %v keys", keys)
	}

	const counter = `eventstore_events_read_total{operation="run-eventql-query"}`
	const decision = `FROM e IN events WHERE e.type == "io.example.tagged" AND e.data.reader == "/readers/3" PROJECT INTO COUNT()`
	before := metrics(t, inst)[counter]
	res := runQuery(t, inst, decision)
	if res.status != 200 || res.err != "" || len(res.rows) != 1 || res.rows[0] != float64(300) {
		t.Fatalf("%s: %+v", decision, res)
	}
	if loaded := metrics(t, inst)[counter] - before; loaded != 300 {
		t.Fatalf("the decision loaded %v events, want the reader's 300", loaded)
	}
	// Scanned, the same query reads every event.
	before = metrics(t, inst)[counter]
	runQuery(t, inst, `FROM e IN events WHERE e.type == "io.example.tagged" AND e.data.tags CONTAINS "t3" PROJECT INTO COUNT()`)
	if loaded := metrics(t, inst)[counter] - before; loaded != 2_100 {
		t.Fatalf("a query no index serves loaded %v events, want 2100", loaded)
	}

	write := func(condition string) int {
		t.Helper()
		body := fmt.Sprintf(`{"events":[{"source":"https://library.example.com","subject":"/readers/3","type":"io.example.tagged","data":{"tags":[],"reader":"/readers/3"}}],`+
			`"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":%q}}]}`,
			`FROM e IN events WHERE e.type == "io.example.tagged" AND e.data.reader == "/readers/3" AND (e.id AS INT + 1) > 2000 PROJECT INTO `+condition)
		return inst.Do("POST", "/api/v1/write-events", harness.Token, body).StatusCode
	}
	// Events 2000 to 2099 hold 14 of reader 3's.
	if status := write("COUNT() < 15"); status != 200 {
		t.Fatalf("a decision that holds: %d", status)
	}
	if status := write("COUNT() < 15"); status != 409 {
		t.Fatalf("the same decision after its own event: %d", status)
	}
}

// TestDataIndexBuildSurvivesKillNine registers a data index on a store of
// 200,000 events, kills the service with SIGKILL while the build runs,
// and starts it again: the build goes on from where its last commit left
// it, never from further back, the index becomes ready, verify-store finds
// every key the events need and no other, and the index answers as a scan
// does.
func TestDataIndexBuildSurvivesKillNine(t *testing.T) {
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + t.TempDir(), "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	for i := 0; i < 200_000; i += 10_000 {
		mustWrite(t, inst, taggedEvents(i, 10_000))
	}
	// The kill must cut the build: a build done before it is removed and
	// registered again, at most five times.
	for attempt := 1; ; attempt++ {
		if r := inst.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"tags","path":"/tags"}`); r.StatusCode != 200 {
			t.Fatalf("register: %d %s", r.StatusCode, r.Body)
		}
		var cut dataIndexLine
		waitUntil(t, 30*time.Second, func() bool { cut = dataIndexes(t, inst)["tags"]; return cut.IndexedEvents > 0 })
		inst.Signal(syscall.SIGKILL)
		inst.Wait(10 * time.Second)
		inst = harness.Start(t, bin, args...)
		if x := dataIndexes(t, inst)["tags"]; x.State == "building" {
			if x.IndexedEvents < cut.IndexedEvents {
				t.Fatalf("the build went back from %d to %d events", cut.IndexedEvents, x.IndexedEvents)
			}
			break
		}
		if attempt == 5 {
			t.Fatal("five builds were done before the kill")
		}
		if r := inst.Do("POST", "/api/v1/remove-data-index", harness.Token, `{"name":"tags"}`); r.StatusCode != 200 {
			t.Fatalf("remove: %d %s", r.StatusCode, r.Body)
		}
	}
	waitUntil(t, 60*time.Second, func() bool { return dataIndexes(t, inst)["tags"].State == "ready" })
	lines := stream(t, inst, "/api/v1/verify-store", `{}`)
	if last := lines[len(lines)-1]; last.Type != "verification" || !strings.Contains(string(last.Payload), `"verified":true`) {
		t.Fatalf("verify-store after the kill: %s %s", last.Type, last.Payload)
	}
	res := runQuery(t, inst, `FROM e IN events WHERE e.data.tags CONTAINS "t7" PROJECT INTO COUNT()`)
	if res.status != 200 || len(res.rows) != 1 || res.rows[0] != float64(20_000) {
		t.Fatalf("events tagged t7: %+v", res)
	}
}

// TestPreconditionReadingManyEventsWarns writes with a precondition that
// reads more than 10,000 events, twice: the service warns once, naming the
// data path an index could serve it by.
func TestPreconditionReadingManyEventsWarns(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	mustWrite(t, inst, taggedEvents(0, 10_000))
	mustWrite(t, inst, taggedEvents(10_000, 10))
	for range 2 {
		body := `{"events":[{"source":"https://library.example.com","subject":"/readers/1","type":"io.example.tagged","data":{}}],` +
			`"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events WHERE e.type == \"io.example.tagged\" AND e.data.reader == \"/readers/1\" PROJECT INTO COUNT() < 100000"}}]}`
		if r := inst.Do("POST", "/api/v1/write-events", harness.Token, body); r.StatusCode != 200 {
			t.Fatalf("write: %d %s", r.StatusCode, r.Body)
		}
	}
	line := inst.WaitForLog("precondition query read many events", 5*time.Second)
	if line["level"] != "WARN" || line["eventsRead"] != float64(10_010) || fmt.Sprint(line["dataIndexPaths"]) != "[/reader]" ||
		line["query"] != `FROM e IN events WHERE e.type == ? AND e.data.reader == ? PROJECT INTO COUNT() < ?` {
		t.Fatalf("the warning: %v", line)
	}
	if n := len(inst.Logs("precondition query read many events")); n != 1 {
		t.Fatalf("%d warnings for one shape within a minute", n)
	}
}

// TestDataIndexBuildHandedOver registers a data index through one of
// three PostgreSQL-mode nodes on a store of 100,000 events and kills that
// node with SIGKILL while the build runs: the other nodes finish it,
// verify-store finds every key the events need and no other, and the index
// answers as a scan does.
func TestDataIndexBuildHandedOver(t *testing.T) {
	args := harness.Postgres(pg.Database(t))
	nodes := harness.StartCluster(t, bin, 3, args...).Nodes()
	for i := 0; i < 100_000; i += 10_000 {
		mustWrite(t, nodes[i/10_000%3], taggedEvents(i, 10_000))
	}
	// The kill must cut the build: a build done before it is removed and
	// registered again, at most five times.
	for attempt := 1; ; attempt++ {
		starter := nodes[0]
		if r := starter.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"tags","path":"/tags"}`); r.StatusCode != 200 {
			t.Fatalf("register: %d %s", r.StatusCode, r.Body)
		}
		waitUntil(t, 30*time.Second, func() bool { return dataIndexes(t, starter)["tags"].IndexedEvents > 0 })
		starter.Signal(syscall.SIGKILL)
		starter.Wait(10 * time.Second)
		cut := dataIndexes(t, nodes[1])["tags"]
		t.Logf("attempt %d: the node that registered the index killed with %d of %d events indexed", attempt, cut.IndexedEvents, cut.Events)
		if cut.State == "building" {
			waitUntil(t, 60*time.Second, func() bool {
				x := dataIndexes(t, nodes[1])["tags"]
				if x.IndexedEvents < cut.IndexedEvents {
					t.Fatalf("the build went back from %d to %d events", cut.IndexedEvents, x.IndexedEvents)
				}
				return x.State == "ready"
			})
			break
		}
		if attempt == 5 {
			t.Fatal("five builds were done before the kill")
		}
		if r := nodes[1].Do("POST", "/api/v1/remove-data-index", harness.Token, `{"name":"tags"}`); r.StatusCode != 200 {
			t.Fatalf("remove: %d %s", r.StatusCode, r.Body)
		}
		nodes[0] = harness.Start(t, bin, args...)
	}
	lines := stream(t, nodes[1], "/api/v1/verify-store", `{}`)
	if last := lines[len(lines)-1]; last.Type != "verification" || !strings.Contains(string(last.Payload), `"verified":true`) {
		t.Fatalf("verify-store after the kill: %s %s", last.Type, last.Payload)
	}
	for _, node := range nodes[1:] {
		res := runQuery(t, node, `FROM e IN events WHERE e.data.tags CONTAINS "t7" PROJECT INTO COUNT()`)
		if res.status != 200 || len(res.rows) != 1 || res.rows[0] != float64(10_000) {
			t.Fatalf("events tagged t7: %+v", res)
		}
	}
}
