package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

const queryPath = "/api/v1/run-eventql-query"

// queryBody is the request body of a query.
func queryBody(query string) string {
	raw, _ := json.Marshal(map[string]string{"query": query})
	return string(raw)
}

// queryResult is the outcome of a query: its status, rows, and the
// message of its error line or 400 body.
type queryResult struct {
	status int
	rows   []any
	err    string
}

// runQuery sends a query and checks the framing of the answer: 400 with a
// plain-text body, or an NDJSON stream of row lines, heartbeats and at most
// one final error line.
func runQuery(t *testing.T, inst harness.Target, query string) queryResult {
	t.Helper()
	r := inst.Do("POST", queryPath, harness.Token, queryBody(query))
	if r.StatusCode != 200 {
		if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || !strings.HasSuffix(string(r.Body), "\n") {
			t.Fatalf("%s: %d with %q body %q", query, r.StatusCode, ct, r.Body)
		}
		return queryResult{status: r.StatusCode, err: strings.TrimSuffix(string(r.Body), "\n")}
	}
	res := queryResult{status: 200}
	lines := streamLines(t, r, queryPath)
	for i, l := range lines {
		switch l.Type {
		case "row":
			var row any
			if err := json.Unmarshal(l.Payload, &row); err != nil {
				t.Fatal(err)
			}
			res.rows = append(res.rows, row)
		case "heartbeat":
			if string(l.Payload) != "{}" {
				t.Fatalf("heartbeat payload %s", l.Payload)
			}
		case "error":
			var payload struct{ Error string }
			if err := json.Unmarshal(l.Payload, &payload); err != nil || i != len(lines)-1 {
				t.Fatalf("error line %s is not the last of %d lines", l.Payload, len(lines))
			}
			res.err = payload.Error
		default:
			t.Fatalf("line of type %q", l.Type)
		}
	}
	return res
}

// eventqlInstance starts the service and writes the conformance data set
// in one request.
func eventqlInstance(t *testing.T, start starter, extra ...string) (harness.Target, *eventqltest.Conformance) {
	t.Helper()
	c := eventqltest.Load(t)
	inst := start(t, extra...)
	body, _ := json.Marshal(map[string]any{"events": c.Dataset.Events})
	if events := mustWrite(t, inst, string(body)); len(events) != 11 || events[10].ID != "10" {
		t.Fatalf("data set written as %d events", len(events))
	}
	return inst, c
}

// TestEventQLConformance runs every case of eventql-cases.json against the
// binary, then the precondition cases (docs/eventql.md §17).
func TestEventQLConformance(t *testing.T) { eachTarget(t, testEventQLConformance) }

func testEventQLConformance(t *testing.T, start starter) {
	inst, c := eventqlInstance(t, start)
	for _, tc := range c.Cases {
		res := runQuery(t, inst, tc.Query)
		switch tc.ExpectError {
		case "static":
			if res.status != 400 || !strings.HasPrefix(res.err, "invalid query: ") {
				t.Errorf("%s: %s\nwant a static error, got %d %q", tc.ID, tc.Query, res.status, res.err)
			}
		case "runtime":
			if res.status != 200 || !strings.HasPrefix(res.err, "query failed: ") {
				t.Errorf("%s: %s\nwant a runtime error, got %d %q", tc.ID, tc.Query, res.status, res.err)
			}
		default:
			if res.status != 200 || res.err != "" || !eventqltest.SameRows(res.rows, tc.Expected, tc.Ordered) {
				got, _ := json.Marshal(res.rows)
				want, _ := json.Marshal(tc.Expected)
				t.Errorf("%s: %s\n got %d %s %q\nwant %s", tc.ID, tc.Query, res.status, got, res.err, want)
			}
		}
	}
	probe, _ := json.Marshal(c.PreconditionProbe)
	for _, tc := range c.PreconditionCases {
		before := readIDs(t, inst, `{"subject":"/","options":{"recursive":true}}`)
		body := fmt.Sprintf(`{"events":[%s],"preconditions":[{"type":"isEventQlQueryTrue","payload":%s}]}`, probe, queryBody(tc.Query))
		r, _ := writeEvents(t, inst, body)
		if r.StatusCode != tc.ExpectStatus {
			t.Errorf("%s: %s\nstatus %d %s, want %d", tc.ID, tc.Query, r.StatusCode, r.Body, tc.ExpectStatus)
		}
		after := readIDs(t, inst, `{"subject":"/","options":{"recursive":true}}`)
		if (r.StatusCode == 200) == (after == before) {
			t.Errorf("%s: status %d, events before %q, after %q", tc.ID, r.StatusCode, before, after)
		}
	}
}

func TestEventQLWire(t *testing.T) { eachTarget(t, testEventQLWire) }

func testEventQLWire(t *testing.T, start starter) {
	inst := start(t)
	// Empty store: no rows, an empty body; an aggregate still yields its row.
	if r := inst.Do("POST", queryPath, harness.Token, queryBody("FROM e IN events PROJECT INTO e")); r.StatusCode != 200 || len(r.Body) != 0 {
		t.Fatalf("empty store: %d %q", r.StatusCode, r.Body)
	}
	if res := runQuery(t, inst, "FROM e IN events PROJECT INTO COUNT() == 0"); len(res.rows) != 1 || res.rows[0] != true {
		t.Fatalf("aggregate on an empty store: %+v", res)
	}
	mustWrite(t, inst, `{"events":[
		{"source":"https://x.example","subject":"/v/1","type":"io.example.value","data":{"value":23}},
		{"source":"https://x.example","subject":"/v/2","type":"io.example.value","data":{"value":42}}]}`)
	for query, want := range map[string]string{
		"FROM e IN events PROJECT INTO { average: AVG(e.data.value), count: COUNT() }": `[{"average":32.5,"count":2}]`,
		"FROM e IN events PROJECT INTO null":                                           `[null,null]`,
		`FROM e IN events TOP 1 PROJECT INTO [42, true, "hello", null, 1.5]`:           `[[42,true,"hello",null,1.5]]`,
	} {
		got, _ := json.Marshal(runQuery(t, inst, query).rows)
		if string(got) != want {
			t.Errorf("%s: got %s, want %s", query, got, want)
		}
	}
	// Whole events come out exactly as read-events writes them.
	read := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)
	rows := stream(t, inst, queryPath, queryBody("FROM e IN events PROJECT INTO e"))
	nested := stream(t, inst, queryPath, queryBody("FROM e IN events PROJECT INTO { ev: e }"))
	for i := range read {
		parseEvent(t, rows[i].Payload)
		if string(rows[i].Payload) != string(read[i].Payload) || string(nested[i].Payload) != `{"ev":`+string(read[i].Payload)+`}` {
			t.Fatalf("event row %s\nread-events %s\nnested %s", rows[i].Payload, read[i].Payload, nested[i].Payload)
		}
	}
	for body, want := range map[string]string{
		`{}`:                           "invalid query: empty query",
		`{"query":""}`:                 "invalid query: empty query",
		`{"query":null}`:               "invalid query: empty query",
		`{"query":"  /* nothing */ "}`: "invalid query: empty query",
		`{"query":1}`:                  "invalid request: malformed JSON",
		`{"query":"FROM e IN events WHERE e.id == '1'"}`:                 "invalid query: 1:35: expected PROJECT INTO, found end of query",
		`{"query":"FROM e IN events\nWHERE x.id == '1' PROJECT INTO e"}`: "invalid query: 2:7: unknown alias 'x'",
		`not json`: "invalid request: malformed JSON",
	} {
		r := inst.Do("POST", queryPath, harness.Token, body)
		if r.StatusCode != 400 || !strings.HasPrefix(string(r.Body), want) {
			t.Errorf("%s: %d %q, want 400 %q", body, r.StatusCode, r.Body, want)
		}
	}
	if r := inst.Do("POST", queryPath, "", queryBody("FROM e IN events PROJECT INTO e")); r.StatusCode != 401 {
		t.Errorf("without a token: %d", r.StatusCode)
	}
	res := runQuery(t, inst, "FROM e IN events PROJECT INTO 10 / (e.data.value - 42)")
	if len(res.rows) != 1 || res.err != "query failed: 1:34: division by zero" {
		t.Errorf("runtime error after a row: %+v", res)
	}
	m := metrics(t, inst)
	if m[`eventstore_eventql_queries_total{result="ok"}`] < 5 || m[`eventstore_eventql_queries_total{result="invalid"}`] != 8 ||
		m[`eventstore_eventql_queries_total{result="error"}`] != 1 {
		t.Errorf("query metrics: ok %v invalid %v error %v", m[`eventstore_eventql_queries_total{result="ok"}`],
			m[`eventstore_eventql_queries_total{result="invalid"}`], m[`eventstore_eventql_queries_total{result="error"}`])
	}
}

// TestEventQLIndexUse observes index use through the events-read counter.
func TestEventQLIndexUse(t *testing.T) { eachTarget(t, testEventQLIndexUse) }

func testEventQLIndexUse(t *testing.T, start starter) {
	inst, _ := eventqlInstance(t, start)
	const counter = `eventstore_events_read_total{operation="run-eventql-query"}`
	for query, want := range map[string]float64{
		`FROM e IN events WHERE e.type == "io.eventsourcingdb.library.reader-registered" PROJECT INTO e.id`: 2,
		`FROM e IN events WHERE STARTSWITH(e.subject, "/books/4") PROJECT INTO e.id`:                        4,
		`FROM e IN events WHERE e.subject == "/books/42" PROJECT INTO e.id`:                                 4,
		`FROM e IN events WHERE e.id AS INT > 8 PROJECT INTO e.id`:                                          2,
		`FROM e IN events WHERE e.data.price > 20 PROJECT INTO e.id`:                                        11,
	} {
		before := metrics(t, inst)[counter]
		if res := runQuery(t, inst, query); res.status != 200 || res.err != "" {
			t.Fatalf("%s: %+v", query, res)
		}
		if got := metrics(t, inst)[counter] - before; got != want {
			t.Errorf("%s: loaded %v events, want %v", query, got, want)
		}
	}
}

// slowQuery keeps the service busy for a long time without producing a row:
// it counts the tuples of the data set's product with itself, nine levels
// deep (11^9 of them).
const slowQuery = "FROM a IN events FROM b IN events FROM c IN events FROM d IN events FROM f IN events FROM g IN events " +
	"FROM h IN events FROM i IN events FROM j IN events PROJECT INTO COUNT()"

// openQuery starts a query on a raw connection and returns a reader of its
// response.
func openQuery(t *testing.T, inst harness.Target, query string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(inst.URL("http"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := queryBody(query)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", queryPath, harness.Token, len(body), body)
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("status line %q: %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			return conn, br
		}
	}
}

// chunkLine reads the next NDJSON line from a chunked body.
func chunkLine(t *testing.T, conn net.Conn, br *bufio.Reader, timeout time.Duration) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(timeout))
	size, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("read chunk: %v", err)
	}
	if size == "0\r\n" {
		return ""
	}
	var n int
	fmt.Sscanf(strings.TrimSpace(size), "%x", &n)
	chunk := make([]byte, n+2)
	if _, err := io.ReadFull(br, chunk); err != nil {
		t.Fatal(err)
	}
	return string(chunk[:n])
}

func TestEventQLHeartbeatsAndCancellation(t *testing.T) {
	eachTarget(t, testEventQLHeartbeatsAndCancellation)
}

func testEventQLHeartbeatsAndCancellation(t *testing.T, start starter) {
	inst, _ := eventqlInstance(t, start)
	conn, br := openQuery(t, inst, slowQuery)
	began := time.Now()
	for i := 0; i < 2; i++ {
		if line := chunkLine(t, conn, br, 3*time.Second); line != `{"type":"heartbeat","payload":{}}`+"\n" {
			t.Fatalf("line %d: %q", i, line)
		}
	}
	if elapsed := time.Since(began); elapsed < 1500*time.Millisecond {
		t.Fatalf("two heartbeats within %v", elapsed)
	}
	// The client goes away: the query stops, the CPU comes back.
	conn.Close()
	const counter = `eventstore_events_read_total{operation="run-eventql-query"}`
	// The query ends and is counted as ended without an error line.
	waitUntil(t, 5*time.Second, func() bool { return metrics(t, inst)[`eventstore_eventql_queries_total{result="ok"}`] == 1 })
	loaded := metrics(t, inst)[counter]
	if loaded == 0 {
		t.Fatal("the cancelled query loaded no events")
	}
	time.Sleep(300 * time.Millisecond)
	if again := metrics(t, inst)[counter]; again != loaded {
		t.Fatalf("the query went on reading after the client left: %v then %v", loaded, again)
	}
}

func TestEventQLEndsOnShutdown(t *testing.T) {
	target, _ := eventqlInstance(t, startPebble)
	inst := target.Nodes()[0]
	conn, br := openQuery(t, inst, slowQuery)
	defer conn.Close()
	if line := chunkLine(t, conn, br, 3*time.Second); !strings.Contains(line, "heartbeat") {
		t.Fatalf("first line %q", line)
	}
	inst.Signal(syscall.SIGTERM)
	for {
		line := chunkLine(t, conn, br, 5*time.Second)
		if strings.Contains(line, "heartbeat") {
			continue
		}
		if line != `{"type":"error","payload":{"error":"service unavailable: shutting down"}}`+"\n" {
			t.Fatalf("final line %q", line)
		}
		break
	}
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

func TestEventQLMemoryLimit(t *testing.T) { eachTarget(t, testEventQLMemoryLimit) }

func testEventQLMemoryLimit(t *testing.T, start starter) {
	inst, _ := eventqlInstance(t, start, "--eventql-memory-limit=2KiB")
	res := runQuery(t, inst, "FROM a IN events FROM b IN events ORDER BY a.id PROJECT INTO b.id")
	if res.status != 200 || res.err != "query failed: memory limit of 2048 bytes exceeded" {
		t.Fatalf("ORDER BY over the limit: %+v", res)
	}
	r := inst.Do("POST", "/api/v1/write-events", harness.Token, `{"events":[{"source":"https://x.example","subject":"/x","type":"io.example.x","data":{}}],
		"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events ORDER BY e.id PROJECT INTO COUNT() > 0"}}]}`)
	if r.StatusCode != 400 || string(r.Body) != "invalid precondition: query failed: memory limit of 2048 bytes exceeded\n" {
		t.Fatalf("precondition over the limit: %d %q", r.StatusCode, r.Body)
	}
	if res := runQuery(t, inst, "FROM e IN events WHERE e.id == '3' PROJECT INTO e.data.name"); len(res.rows) != 1 {
		t.Fatalf("streaming queries are not limited: %+v", res)
	}
}

func TestEventQLPreconditions(t *testing.T) { eachTarget(t, testEventQLPreconditions) }

func testEventQLPreconditions(t *testing.T, start starter) {
	// The time limit is one that the race below, twelve writers at once on
	// loaded cores, never reaches; only slowQuery does.
	inst := start(t, "--eventql-precondition-timeout=2s")
	guarded := func(subject, query string) harness.Response {
		return inst.Do("POST", "/api/v1/write-events", harness.Token, fmt.Sprintf(
			`{"events":[{"source":"https://x.example","subject":%q,"type":"io.example.claimed","data":{}}],"preconditions":[{"type":"isEventQlQueryTrue","payload":%s}]}`,
			subject, queryBody(query)))
	}
	pristine := func(subject string) string {
		return fmt.Sprintf("FROM e IN events WHERE e.subject == '%s' PROJECT INTO COUNT() == 0", subject)
	}
	mustWrite(t, inst, candidates(strings.Split(strings.Repeat("/fill io.example.filler ", 20), " ")...))
	if r := guarded("/books/42", pristine("/books/42")); r.StatusCode != 200 {
		t.Fatalf("first claim: %d %s", r.StatusCode, r.Body)
	}
	if r := guarded("/books/42", pristine("/books/42")); r.StatusCode != 409 || string(r.Body) != "state conflict: precondition failed\n" {
		t.Fatalf("second claim: %d %s", r.StatusCode, r.Body)
	}
	for query, want := range map[string]string{
		"FROM e IN events PROJECT INTO COUNT()":                "invalid precondition: query must yield a BOOLEAN, got INT",
		"FROM e IN events PROJECT INTO e.data.x + 1 == 1 / 0":  "invalid precondition: query failed: 1:49: division by zero",
		"FROM e IN events WHERE x.id == '0' PROJECT INTO true": "invalid precondition: 1:24: unknown alias 'x'",
		"":        "invalid precondition: empty query",
		slowQuery: "invalid precondition: query failed: time limit of 2s exceeded",
	} {
		if r := guarded("/other", query); r.StatusCode != 400 || string(r.Body) != want+"\n" {
			t.Errorf("%s: %d %q, want 400 %q", query, r.StatusCode, r.Body, want)
		}
	}
	if got := readIDs(t, inst, `{"subject":"/books","options":{"recursive":true}}`); got != "20" {
		t.Fatalf("events after refused writes: %q", got)
	}
	if got := readIDs(t, inst, `{"subject":"/other"}`); got != "" {
		t.Fatalf("a refused write was written: %q", got)
	}

	// The race: concurrent writers each claim one subject guarded by
	// COUNT() == 0 on it; exactly one wins every round.
	for round := 0; round < 10; round++ {
		subject := fmt.Sprintf("/race/%d", round)
		var wg sync.WaitGroup
		answers := make(chan harness.Response, 12)
		for w := 0; w < 12; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers <- guarded(subject, pristine(subject))
			}()
		}
		wg.Wait()
		close(answers)
		counts := map[int]int{}
		var others []string
		for r := range answers {
			counts[r.StatusCode]++
			if r.StatusCode != 200 && r.StatusCode != 409 {
				others = append(others, fmt.Sprintf("%d %s", r.StatusCode, strings.TrimSpace(string(r.Body))))
			}
		}
		if counts[200] != 1 || counts[409] != 11 {
			t.Fatalf("round %d: outcomes %v; the other answers: %q", round, counts, others)
		}
	}
}
