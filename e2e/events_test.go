package e2e

import (
	"bufio"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

const lib = "com.example.library."

// libraryInstance starts an instance holding the store of docs/api.md §5.
func libraryInstance(t *testing.T, start starter, extra ...string) harness.Target {
	t.Helper()
	inst := start(t, extra...)
	mustWrite(t, inst, candidates(
		"/books/42", lib+"book-acquired", "/books/42", lib+"book-borrowed", "/books/7", lib+"book-acquired",
		"/books/42", lib+"book-returned", "/readers/jane", lib+"reader-registered", "/books/42/notes", lib+"note-added",
	))
	mustWrite(t, inst, candidates("/books/42", lib+"book-borrowed"))
	return inst
}

func TestWriteEvents(t *testing.T) { eachTarget(t, testWriteEvents) }

func testWriteEvents(t *testing.T, start starter) {
	inst := start(t)
	first := mustWrite(t, inst, `{"events":[
		{"source":"https://library.example.com","subject":"/books/42","type":"com.example.library.book-acquired","data":{"title":"2001 <A Space Odyssey>","year":1968,"rating":4.50,"views":12345678901234567890,"ratio":1e3,"nested":{"z":1,"a":[{"y":2,"b":3}]},"name":"Grüße, 日本 & <co> 😀"}},
		{"source":"https://library.example.com","subject":"/books/42","type":"com.example.library.book-borrowed","data":{"reader":"jane"},"traceParent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","traceState":"vendor=value"}]}`)
	if len(first) != 2 || first[0].ID != "0" || first[1].ID != "1" {
		t.Fatalf("ids %s, %s", first[0].ID, first[1].ID)
	}
	if first[0].PredecessorHash != strings.Repeat("0", 64) || first[1].PredecessorHash != first[0].Hash {
		t.Fatalf("chain: %s -> %s", first[0].PredecessorHash, first[1].PredecessorHash)
	}
	if string(first[0].Data) != `{"name":"Grüße, 日本 \u0026 \u003cco\u003e 😀","nested":{"a":[{"b":3,"y":2}],"z":1},"rating":4.5,"ratio":1000,"title":"2001 \u003cA Space Odyssey\u003e","views":12345678901234567890,"year":1968}` {
		t.Fatalf("canonical data: %s", first[0].Data)
	}
	if first[0].Signature != nil || !strings.HasSuffix(string(first[0].raw), `"signature":null}`) {
		t.Fatalf("signature without a key: %s", first[0].raw)
	}
	if first[0].TraceParent != nil || first[1].TraceParent == nil || *first[1].TraceParent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" || *first[1].TraceState != "vendor=value" {
		t.Fatalf("trace fields: %s / %s", first[0].raw, first[1].raw)
	}
	t0, _ := time.Parse(time.RFC3339Nano, first[0].Time)
	t1, _ := time.Parse(time.RFC3339Nano, first[1].Time)
	if !t1.After(t0) {
		t.Fatalf("times not increasing: %s, %s", first[0].Time, first[1].Time)
	}

	// Ids continue across requests; written, read and re-read events are byte-identical.
	next := mustWrite(t, inst, candidates("/books/7", lib+"book-acquired"))
	if next[0].ID != "2" || next[0].PredecessorHash != first[1].Hash {
		t.Fatalf("next event: %s", next[0].raw)
	}
	lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)
	written := append(first, next...)
	if len(lines) != len(written) {
		t.Fatalf("read %d events, wrote %d", len(lines), len(written))
	}
	for i, l := range lines {
		if string(l.Payload) != string(written[i].raw) {
			t.Fatalf("event %d differs:\n read %s\nwrote %s", i, l.Payload, written[i].raw)
		}
	}
}

func TestLargeAndEscapedData(t *testing.T) { eachTarget(t, testLargeAndEscapedData) }

func testLargeAndEscapedData(t *testing.T, start starter) {
	inst := start(t)
	long := strings.Repeat("a", 65536)
	escaped := strings.Repeat("<&>", 3000)
	events := mustWrite(t, inst, fmt.Sprintf(`{"events":[{"source":"https://x","subject":"/big","type":"io.example.big","data":{"long":%q,"escaped":%q}}]}`, long, escaped))
	var data map[string]string
	if err := json.Unmarshal(events[0].Data, &data); err != nil || data["long"] != long || data["escaped"] != escaped {
		t.Fatal("large or escaped strings did not round-trip")
	}
	if n := len(events[0].raw); n < 65536+3000*18 {
		t.Fatalf("event only %d bytes", n)
	}
}

func TestWriteValidation(t *testing.T) { eachTarget(t, testWriteValidation) }

func testWriteValidation(t *testing.T, start starter) {
	inst := start(t, "--max-event-size=128", "--max-request-size=4KiB")
	valid := `{"source":"https://x","subject":"/a","type":"io.example.thing","data":{}}`
	cases := []struct {
		name, body, want string
		status           int
	}{
		{"empty subject", `{"events":[{"source":"https://x","subject":"","type":"io.example.thing","data":{}}]}`, "invalid subject: ''", 400},
		{"relative subject", `{"events":[{"source":"https://x","subject":"test","type":"io.example.thing","data":{}}]}`, "invalid subject: 'test'", 400},
		{"empty type", `{"events":[{"source":"https://x","subject":"/a","type":"","data":{}}]}`, "invalid event type: ''", 400},
		{"no events", `{}`, "invalid request: events must contain at least one event", 400},
		{"event too large", `{"events":[{"source":"https://x","subject":"/a","type":"io.example.thing","data":{"s":"` + strings.Repeat("x", 200) + `"}}]}`, "invalid data: event data exceeds the limit of 128 bytes", 400},
		{"body too large", `{"events":[` + strings.Repeat(valid+",", 60) + valid + `]}`, "request too large: body exceeds the limit of 4096 bytes", 413},
		{"precondition type", `{"events":[` + valid + `],"preconditions":[{"type":"isSubjectNice","payload":{"subject":"/a"}}]}`, "invalid precondition: unknown type 'isSubjectNice'", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, tc.body), tc.status, tc.want)
		})
	}
	checkError(t, inst.Do("POST", "/api/v1/write-events", "", "not even json"), 401, "unauthorized")
	checkError(t, inst.Do("GET", "/api/v1/write-events", harness.Token, ""), 405, "method not allowed: use POST")
	// Unauthenticated requests never get a redirect, whatever the path.
	checkError(t, inst.Do("POST", "//api/v1/write-events", "", valid), 401, "unauthorized")
	checkError(t, inst.Do("POST", "//api/v1/write-events", harness.Token, valid), 404, "not found: unknown route")
	// Decoder errors speak of JSON, not of Go types.
	checkError(t, inst.Do("POST", "/api/v1/read-events", harness.Token, `[1]`), 400, "invalid request: malformed JSON: request body must be a JSON object")
	checkError(t, inst.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":5}`), 400, "invalid request: malformed JSON: field 'subject' must be a string")

	// A huge invalid value is quoted back cut at 100 bytes.
	big := start(t)
	huge := "x" + strings.Repeat("y", 15<<20)
	checkError(t, big.Do("POST", "/api/v1/write-events", harness.Token, `{"events":[{"source":"https://x","subject":"`+huge+`","type":"io.example.thing","data":{}}]}`),
		400, "invalid subject: '"+huge[:100]+"…'")
	if lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`); len(lines) != 0 {
		t.Fatalf("rejected writes left %d events", len(lines))
	}
}

func TestPreconditionsOverHTTP(t *testing.T) { eachTarget(t, testPreconditionsOverHTTP) }

func testPreconditionsOverHTTP(t *testing.T, start starter) {
	inst := start(t)
	event := `{"source":"https://x","subject":"/books/42","type":"io.example.thing","data":{}}`
	with := func(precondition string) string {
		return `{"events":[` + event + `],"preconditions":[` + precondition + `]}`
	}
	conflict := func(body string) {
		t.Helper()
		checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, body), 409, "state conflict: precondition failed")
	}
	conflict(with(`{"type":"isSubjectPopulated","payload":{"subject":"/books/42"}}`))
	conflict(with(`{"type":"isSubjectOnEventId","payload":{"subject":"/books/42","eventId":"0"}}`))
	mustWrite(t, inst, with(`{"type":"isSubjectPristine","payload":{"subject":"/books/42"}}`))
	conflict(with(`{"type":"isSubjectPristine","payload":{"subject":"/books/42"}}`))
	conflict(with(`{"type":"isSubjectPopulated","payload":{"subject":"/books/9"}}`))
	conflict(with(`{"type":"isSubjectOnEventId","payload":{"subject":"/books/42","eventId":"5"}}`))
	mustWrite(t, inst, with(`{"type":"isSubjectPopulated","payload":{"subject":"/books/42"}}`))
	mustWrite(t, inst, with(`{"type":"isSubjectOnEventId","payload":{"subject":"/books/42","eventId":"1"}}`))
	mustWrite(t, inst, with(`{"type":"isSubjectPristine","payload":{"subject":"/books"}}`)) // exact, not recursive
	if got := readIDs(t, inst, `{"subject":"/books/42"}`); got != "0,1,2,3" {
		t.Fatalf("events after the preconditions: %s", got)
	}
}

func TestReadExamples(t *testing.T) { eachTarget(t, testReadExamples) }

func testReadExamples(t *testing.T, start starter) {
	inst := libraryInstance(t, start)
	fromLatest := func(subject, eventType, missing string) string {
		return fmt.Sprintf(`"fromLatestEvent":{"subject":%q,"type":%q,"ifEventIsMissing":%q}`, subject, lib+eventType, missing)
	}
	cases := []struct{ body, want string }{
		{`{"subject":"/books/42"}`, "0,1,3,6"},
		{`{"subject":"/books/42","options":{"recursive":true}}`, "0,1,3,5,6"},
		{`{"subject":"/books","options":{"recursive":false}}`, ""},
		{`{"subject":"/books","options":{"recursive":true}}`, "0,1,2,3,5,6"},
		{`{"subject":"/","options":{"recursive":true}}`, "0,1,2,3,4,5,6"},
		{`{"subject":"/"}`, ""},
		{`{"subject":"/books/4","options":{"recursive":true}}`, ""},
		{`{"subject":"/books/42","options":{"recursive":true,"order":"antichronological"}}`, "6,5,3,1,0"},
		{`{"subject":"/books/42","options":{"recursive":true,"lowerBound":{"id":"3","type":"inclusive"}}}`, "3,5,6"},
		{`{"subject":"/books/42","options":{"recursive":true,"lowerBound":{"id":"3","type":"exclusive"}}}`, "5,6"},
		{`{"subject":"/books/42","options":{"upperBound":{"id":"3","type":"exclusive"}}}`, "0,1"},
		{`{"subject":"/books/42","options":{"upperBound":{"id":"3","type":"inclusive"}}}`, "0,1,3"},
		{`{"subject":"/books","options":{"recursive":true,"lowerBound":{"id":"1","type":"inclusive"},"upperBound":{"id":"5","type":"inclusive"}}}`, "1,2,3,5"},
		{`{"subject":"/books/42","options":{"recursive":true,` + fromLatest("/books/42", "book-returned", "read-nothing") + `}}`, "3,5,6"},
		{`{"subject":"/books/42","options":{` + fromLatest("/readers/jane", "reader-registered", "read-nothing") + `}}`, "6"},
		{`{"subject":"/books/42","options":{` + fromLatest("/books/42", "book-lost", "read-nothing") + `}}`, ""},
		{`{"subject":"/books/42","options":{` + fromLatest("/books/42", "book-lost", "read-everything") + `}}`, "0,1,3,6"},
		{`{"subject":"/books/42","options":{` + fromLatest("/books/42", "book-lost", "observe-everything") + `}}`, "0,1,3,6"},
		{`{"subject":"/books/42","options":{"recursive":true,"order":"antichronological",` + fromLatest("/books/42", "book-returned", "read-nothing") + `}}`, "6,5,3"},
		{`{"subject":"/","options":{"recursive":true,"lowerBound":{"id":"5","type":"inclusive"},"upperBound":{"id":"2","type":"inclusive"}}}`, ""},
		{`{"subject":"/","options":{"recursive":true,"lowerBound":{"id":"999999","type":"inclusive"}}}`, ""},
	}
	for _, tc := range cases {
		if got := readIDs(t, inst, tc.body); got != tc.want {
			t.Errorf("read %s: got %q, want %q", tc.body, got, tc.want)
		}
	}

	for body, want := range map[string]string{
		`{"subject":"/","options":{"lowerBound":{"id":"1","type":"inclusive"},` + fromLatest("/a", "x", "read-nothing") + `}}`: "invalid request: lowerBound and fromLatestEvent cannot be combined",
		`{"subject":""}`: "invalid subject: ''",
		`{"subject":"/","options":{"lowerBound":{"id":"hello","type":"inclusive"}}}`:                                    "invalid event id: 'hello'",
		`{"subject":"/","options":{"lowerBound":{"id":"-1","type":"inclusive"}}}`:                                       "invalid event id: '-1'",
		`{"subject":"/","options":{"fromLatestEvent":{"subject":"","type":"a.b.c","ifEventIsMissing":"read-nothing"}}}`: "invalid subject: ''",
		`{"subject":"/","options":{"fromLatestEvent":{"subject":"/a","type":"","ifEventIsMissing":"read-nothing"}}}`:    "invalid event type: ''",
		`{"subject":"/","options":{"heartbeat":true}}`:                                                                  "invalid request: unknown option 'heartbeat'",
	} {
		checkError(t, inst.Do("POST", "/api/v1/read-events", harness.Token, body), 400, want)
	}
}

func TestReadEventsEmptyStore(t *testing.T) { eachTarget(t, testReadEventsEmptyStore) }

func testReadEventsEmptyStore(t *testing.T, start starter) {
	inst := start(t)
	for _, body := range []string{`{"subject":"/"}`, `{"subject":"/","options":{"recursive":true}}`} {
		r := inst.Do("POST", "/api/v1/read-events", harness.Token, body)
		if r.StatusCode != 200 || len(r.Body) != 0 || r.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("empty store: %d %q %q", r.StatusCode, r.Header.Get("Content-Type"), r.Body)
		}
	}
	r := inst.Do("POST", "/api/v1/read-subjects", harness.Token, `{"baseSubject":"/"}`)
	if r.StatusCode != 200 || len(r.Body) != 0 {
		t.Fatalf("read-subjects on an empty store: %d %q", r.StatusCode, r.Body)
	}
}

func TestReadSubjects(t *testing.T) { eachTarget(t, testReadSubjects) }

func testReadSubjects(t *testing.T, start starter) {
	inst := libraryInstance(t, start)
	mustWrite(t, inst, candidates("/a/c", "io.example.x", "/a-b", "io.example.x"))
	subjects := func(base string) string {
		var out []string
		for _, l := range stream(t, inst, "/api/v1/read-subjects", `{"baseSubject":"`+base+`"}`) {
			var p struct {
				Subject string `json:"subject"`
			}
			if err := json.Unmarshal(l.Payload, &p); err != nil || l.Type != "subject" {
				t.Fatalf("read-subjects line %s %s", l.Type, l.Payload)
			}
			out = append(out, p.Subject)
		}
		return strings.Join(out, " ")
	}
	for base, want := range map[string]string{
		"/":               "/ /a /a/c /a-b /books /books/42 /books/42/notes /books/7 /readers /readers/jane",
		"/books":          "/books /books/42 /books/42/notes /books/7",
		"/books/42/notes": "/books/42/notes",
		"/authors":        "",
	} {
		if got := subjects(base); got != want {
			t.Errorf("read-subjects %s: got %q, want %q", base, got, want)
		}
	}
	checkError(t, inst.Do("POST", "/api/v1/read-subjects", harness.Token, `{"baseSubject":""}`), 400, "invalid subject: ''")
	checkError(t, inst.Do("POST", "/api/v1/read-subjects", harness.Token, `{}`), 400, "invalid subject: ''")
}

func TestSignatures(t *testing.T) { eachTarget(t, testSignatures) }

func testSignatures(t *testing.T, start starter) {
	key := harness.WriteFile(t, t.TempDir(), "signing.pem",
		"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n-----END PRIVATE KEY-----\n")
	inst := start(t, "--signing-key-file="+key)
	for _, node := range inst.Nodes() {
		if node.Logs("eventstore is running")[0]["signing"] != true {
			t.Fatal("running entry does not announce signing")
		}
	}
	public, _ := hex.DecodeString("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")
	written := mustWrite(t, inst, candidates("/books/42", lib+"book-acquired", "/books/42", lib+"book-borrowed"))
	for _, e := range written {
		verifySignature(t, ed25519.PublicKey(public), e)
	}
	lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/books/42"}`)
	for i, l := range lines {
		e := parseEvent(t, l.Payload)
		verifySignature(t, ed25519.PublicKey(public), e)
		if string(l.Payload) != string(written[i].raw) {
			t.Fatalf("signed event %d differs between write and read", i)
		}
	}
}

// TestStreamLinesAreSeparateChunks reads read-events over a raw HTTP/1.1
// connection and checks that every chunk of the chunked body is exactly one
// line, as SDKs that parse chunk by chunk need.
func TestStreamLinesAreSeparateChunks(t *testing.T) { eachTarget(t, testStreamLinesAreSeparateChunks) }

func testStreamLinesAreSeparateChunks(t *testing.T, start starter) {
	inst := libraryInstance(t, start)
	conn, err := net.Dial("tcp", strings.TrimPrefix(inst.URL("http"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	postRaw(conn, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if ids := chunkIDs(t, readChunked(t, bufio.NewReader(conn))); len(ids) != 7 {
		t.Fatalf("%d chunks for 7 events", len(ids))
	}
}

func TestEventMetricsAndHealth(t *testing.T) {
	inst := libraryInstance(t, startPebble)
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, `{}`), 400, "invalid request: events must contain at least one event")
	stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)

	r := inst.Do("GET", "/api/v1/health", harness.Token, "")
	var report struct {
		Status string                      `json:"status"`
		Checks map[string][]map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(r.Body, &report); err != nil || report.Status != "pass" {
		t.Fatalf("health: %s", r.Body)
	}
	if v := report.Checks["storage:events"][0]["observedValue"]; v != float64(7) {
		t.Fatalf("storage:events %v", v)
	}
	if v := report.Checks["storage:writable"][0]["observedValue"]; v != true {
		t.Fatalf("storage:writable %v", v)
	}
	if v, _ := report.Checks["storage:size"][0]["observedValue"].(float64); v <= 0 || report.Checks["storage:size"][0]["observedUnit"] != "bytes" {
		t.Fatalf("storage:size %v", report.Checks["storage:size"])
	}

	m := inst.Do("GET", "/api/v1/health?format=openmetrics", harness.Token, "")
	samples := parseOpenMetrics(t, m.Body, m.Header.Get("Content-Type"))
	for series, want := range map[string]float64{
		"eventstore_events_written_total":                       7,
		`eventstore_write_requests_total{result="ok"}`:          2,
		`eventstore_write_requests_total{result="invalid"}`:     1,
		`eventstore_events_read_total{operation="read-events"}`: 7,
		"eventstore_storage_events":                             7,
		"eventstore_storage_head_id":                            6,
		"eventstore_storage_writable":                           1,
		"eventstore_storage_sync_duration_seconds_count":        2,
		"eventstore_write_duration_seconds_count":               2,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if samples["eventstore_storage_size_bytes"] <= 0 {
		t.Errorf("eventstore_storage_size_bytes = %v", samples["eventstore_storage_size_bytes"])
	}
}

// TestReadStreamEndsOnShutdown keeps a read stream open (a slow client)
// while the service stops: the stream must end with the final error line,
// and the process must still stop cleanly.
func TestReadStreamEndsOnShutdown(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	var events []string
	for i := 0; i < 1000; i++ {
		events = append(events, fmt.Sprintf(`{"source":"https://x","subject":"/slow","type":"io.example.slow","data":{"i":%d,"pad":%q}}`, i, strings.Repeat("x", 400)))
	}
	body := `{"events":[` + strings.Join(events, ",") + `]}`
	for i := 0; i < 20; i++ {
		mustWrite(t, inst, body)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(inst.URL("http"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	postRaw(conn, "/api/v1/read-events", `{"subject":"/slow"}`)
	r := bufio.NewReaderSize(conn, 4096)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	// Read a little, so that the stream is under way but far from done.
	if _, err := io.ReadFull(r, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	inst.Signal(syscall.SIGTERM)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading the rest of the stream: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(rest)), "\n")
	var last string
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			last = lines[i]
			break
		}
	}
	if last != `{"type":"error","payload":{"error":"service unavailable: shutting down"}}` {
		t.Fatalf("last line of the stream %q", last)
	}
	if strings.Count(string(rest), `"type":"event"`) >= 20000 {
		t.Fatal("the whole subject was sent; the stream did not end early")
	}
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
