package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

const bookLostSchema = `{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"],"additionalProperties":false}`

func register(t *testing.T, inst harness.Target, eventType, schema string) harness.Response {
	t.Helper()
	return inst.Do("POST", "/api/v1/register-event-schema", harness.Token, `{"eventType":"`+eventType+`","schema":`+schema+`}`)
}

func TestRegisterEventSchema(t *testing.T) { eachTarget(t, testRegisterEventSchema) }

func testRegisterEventSchema(t *testing.T, start starter) {
	inst := start(t)
	// Key order and number spellings are kept; whitespace goes.
	schema := `{ "type": "object", "properties": { "reason": { "type": "string", "maxLength": 1E2 } }, "required": ["reason"], "additionalProperties": false }`
	r := register(t, inst, lib+"book-lost", schema)
	checkCommonHeaders(t, r)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("register: %d %s", r.StatusCode, r.Body)
	}
	subject, eventType, data := checkManagementEvent(t, r.Body)
	stored := `{"type":"object","properties":{"reason":{"type":"string","maxLength":1E2}},"required":["reason"],"additionalProperties":false}`
	if subject != "/api/v1/register-event-schema" || eventType != "io.eventsourcingdb.api.event-schema-registered" ||
		data != `{"eventType":"`+lib+`book-lost","schema":`+stored+`}` {
		t.Fatalf("registered event: %s %s %s", subject, eventType, data)
	}
	checkError(t, register(t, inst, lib+"book-lost", `{"type":"object","properties":{}}`), 409, "schema conflict: schema already exists")

	for _, tc := range []struct{ eventType, schema, want string }{
		{lib + "a", `{"type":"gurkenwasser","properties":{}}`, `invalid schema: at '/type': value must be "object"`},
		{lib + "b", `{"type":"object","additionalProperties":false}`, "invalid schema: missing properties: 'properties'"},
		{lib + "c", `{"x":"asd"}`, "invalid schema: missing properties: 'type', 'properties'"},
		{lib + "d", `[]`, "invalid schema: schema must be a JSON object"},
		{lib + "e", `null`, "invalid schema: schema must be a JSON object"},
		{lib + "f", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{}}`, "invalid schema: unsupported $schema 'http://json-schema.org/draft-04/schema#'"},
		{"io.eventsourcingdb.test.", `{"type":"object","properties":{}}`, "invalid event type: 'io.eventsourcingdb.test.'"},
		{"", `{"type":"object","properties":{}}`, "invalid event type: ''"},
	} {
		checkError(t, register(t, inst, tc.eventType, tc.schema), 400, tc.want)
	}
	r = inst.Do("POST", "/api/v1/register-event-schema", harness.Token, `{"eventType":"`+lib+`g"}`)
	checkError(t, r, 400, "invalid schema: schema must be a JSON object")
	checkError(t, inst.Do("POST", "/api/v1/register-event-schema", "", `{}`), 401, "unauthorized")
}

func TestWritesAreValidated(t *testing.T) { eachTarget(t, testWritesAreValidated) }

func testWritesAreValidated(t *testing.T, start starter) {
	inst := start(t)
	if r := register(t, inst, lib+"book-lost", bookLostSchema); r.StatusCode != 200 {
		t.Fatalf("register: %d %s", r.StatusCode, r.Body)
	}
	body := `{"events":[{"source":"https://x","subject":"/books/42","type":"` + lib + `book-lost","data":{"reason":"flood"}},
		{"source":"https://x","subject":"/books/42","type":"` + lib + `book-lost","data":{"reason":"fire","extra":1}}]}`
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, body), 409,
		"schema conflict: event candidate does not match schema: additionalProperties 'extra' not allowed")
	if lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`); len(lines) != 0 {
		t.Fatalf("a request with a violating event left %d events", len(lines))
	}
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, `{"events":[{"source":"https://x","subject":"/b","type":"`+lib+`book-lost","data":{"reason":7}}]}`), 409,
		"schema conflict: event candidate does not match schema: at '/reason': expected string, but got number")
	mustWrite(t, inst, `{"events":[{"source":"https://x","subject":"/books/42","type":"`+lib+`book-lost","data":{"reason":"flood"}}]}`)
	if got := metrics(t, inst)[`eventstore_write_requests_total{result="schema_conflict"}`]; got != 2 {
		t.Fatalf("schema_conflict outcomes: %v", got)
	}
}

func TestRegistrationOverExistingEvents(t *testing.T) {
	eachTarget(t, testRegistrationOverExistingEvents)
}

func testRegistrationOverExistingEvents(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, `{"events":[{"source":"https://x","subject":"/a","type":"`+lib+`book-lost","data":{"reason":"ok"}},
		{"source":"https://x","subject":"/a","type":"`+lib+`other","data":{"whatever":1}},
		{"source":"https://x","subject":"/a","type":"`+lib+`book-lost","data":{"reason":"ok","page":4}}]}`)
	checkError(t, register(t, inst, lib+"book-lost", bookLostSchema), 409,
		"schema conflict: existing events do not match schema: 2: additionalProperties 'page' not allowed")
	// The refused schema is not registered: the type stays free.
	mustWrite(t, inst, `{"events":[{"source":"https://x","subject":"/a","type":"`+lib+`book-lost","data":{"anything":true}}]}`)
}

// eventTypeLine is a read-event-types payload.
type eventTypeLine struct {
	EventType string          `json:"eventType"`
	IsPhantom bool            `json:"isPhantom"`
	Schema    json.RawMessage `json:"schema"`
}

func TestReadEventTypes(t *testing.T) { eachTarget(t, testReadEventTypes) }

func testReadEventTypes(t *testing.T, start starter) {
	inst := start(t)
	for _, body := range []string{"", "{}", "null", "not json"} {
		if lines := stream(t, inst, "/api/v1/read-event-types", body); len(lines) != 0 {
			t.Fatalf("empty store with body %q: %d lines", body, len(lines))
		}
	}
	mustWrite(t, inst, candidates("/books/42", lib+"book-borrowed", "/books/42", lib+"book-acquired", "/books/7", lib+"book-borrowed"))
	acquired := `{"type":"object","properties":{}}`
	lost := `{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`
	for eventType, schema := range map[string]string{lib + "book-acquired": acquired, lib + "book-lost": lost} {
		if r := register(t, inst, eventType, schema); r.StatusCode != 200 {
			t.Fatalf("register %s: %d %s", eventType, r.StatusCode, r.Body)
		}
	}
	lines := stream(t, inst, "/api/v1/read-event-types", "garbage that is ignored")
	want := []string{
		`{"eventType":"` + lib + `book-acquired","isPhantom":false,"schema":` + acquired + `}`,
		`{"eventType":"` + lib + `book-borrowed","isPhantom":false}`,
		`{"eventType":"` + lib + `book-lost","isPhantom":true,"schema":` + lost + `}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d event types, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l.Type != "eventType" || string(l.Payload) != want[i] {
			t.Errorf("line %d: %s %s, want %s", i, l.Type, l.Payload, want[i])
		}
		var p eventTypeLine
		if err := json.Unmarshal(l.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Schema != nil {
			var got, registered any
			_ = json.Unmarshal(p.Schema, &got)
			_ = json.Unmarshal([]byte(map[bool]string{true: lost, false: acquired}[p.IsPhantom]), &registered)
			if !reflect.DeepEqual(got, registered) {
				t.Errorf("schema of %s is not deep-equal to the registered one", p.EventType)
			}
		}
	}

	r := inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"`+lib+`book-lost"}`)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" || strings.TrimSpace(string(r.Body)) != want[2] {
		t.Fatalf("read-event-type: %d %s", r.StatusCode, r.Body)
	}
	r = inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"`+lib+`book-borrowed"}`)
	if r.StatusCode != 200 || strings.TrimSpace(string(r.Body)) != want[1] {
		t.Fatalf("read-event-type: %d %s", r.StatusCode, r.Body)
	}
	checkError(t, inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"`+lib+`book-burnt"}`), 404, "event type '"+lib+"book-burnt' not found")
	checkError(t, inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"io.eventsourcingdb.test."}`), 400, "invalid event type: 'io.eventsourcingdb.test.'")
	checkError(t, inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{}`), 400, "invalid event type: ''")
}

func TestSchemasSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	if r := register(t, inst, lib+"book-lost", bookLostSchema); r.StatusCode != 200 {
		t.Fatalf("register: %d %s", r.StatusCode, r.Body)
	}
	inst.Signal(syscall.SIGKILL) // acknowledged means durable: no clean shutdown needed
	inst.Wait(10 * time.Second)

	inst = harness.Start(t, bin, args...)
	checkError(t, register(t, inst, lib+"book-lost", bookLostSchema), 409, "schema conflict: schema already exists")
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, `{"events":[{"source":"https://x","subject":"/a","type":"`+lib+`book-lost","data":{}}]}`), 409,
		"schema conflict: event candidate does not match schema: missing properties: 'reason'")
	lines := stream(t, inst, "/api/v1/read-event-types", "")
	if len(lines) != 1 || !strings.Contains(string(lines[0].Payload), `"isPhantom":true,"schema":`+bookLostSchema) {
		t.Fatalf("event types after restart: %v", lines)
	}
}

// schemaLines returns a backup of n schema lines and no event: types
// prefix-00000 … of an object with an integer n.
func schemaLines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"type":"schema","payload":{"eventType":"%s-%05d","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}`+"\n", prefix, i)
	}
	return b.String()
}

// schemaFigures returns the registered and compiled schemas in the
// diagnostics of inst.
func schemaFigures(t *testing.T, inst harness.Target) (registered, compiled float64) {
	t.Helper()
	r := inst.Do("GET", "/api/v1/diagnostics", harness.Token, "")
	var d struct {
		Storage struct {
			Schemas map[string]float64 `json:"schemas"`
		} `json:"storage"`
	}
	if err := json.Unmarshal(r.Body, &d); r.StatusCode != 200 || err != nil || d.Storage.Schemas == nil {
		t.Fatalf("diagnostics: %d %s (%v)", r.StatusCode, r.Body, err)
	}
	return d.Storage.Schemas["registered"], d.Storage.Schemas["compiled"]
}

func TestSchemaLimit(t *testing.T) { eachTarget(t, testSchemaLimit) }

func testSchemaLimit(t *testing.T, start starter) {
	inst := start(t, "--max-event-schemas=3")
	for i := range 3 {
		if r := register(t, inst, fmt.Sprintf("%slimited-%d", lib, i), bookLostSchema); r.StatusCode != 200 {
			t.Fatalf("registration %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	checkError(t, register(t, inst, lib+"limited-3", bookLostSchema), 409, "state conflict: too many event schemas")
	checkError(t, register(t, inst, lib+"limited-0", bookLostSchema), 409, "schema conflict: schema already exists")
	if lines := stream(t, inst, "/api/v1/read-event-types", ""); len(lines) != 3 {
		t.Fatalf("%d event types after a refused registration", len(lines))
	}

	// A restore counts the backup's schema lines against the limit.
	fresh := start(t, "--max-event-schemas=3")
	checkError(t, fresh.Do("POST", "/api/v1/restore", harness.Token, schemaLines(lib+"restored", 4)), 400, "invalid backup: line 4: too many event schemas")
	if lines := stream(t, fresh, "/api/v1/read-event-types", ""); len(lines) != 0 {
		t.Fatalf("%d event types after a refused restore", len(lines))
	}
	if registered, _ := schemaFigures(t, fresh); registered != 0 {
		t.Fatalf("%v schemas registered after a refused restore", registered)
	}
	if r := fresh.Do("POST", "/api/v1/restore", harness.Token, schemaLines(lib+"restored", 3)); r.StatusCode != 200 || !strings.Contains(string(r.Body), `"schemas":3,`) {
		t.Fatalf("restore of 3 schemas at a limit of 3: %d %s", r.StatusCode, r.Body)
	}
}

// TestSchemasCompileOnFirstUse restarts a store holding 10,000 schemas: it
// compiles none of them until a write needs one.
func TestSchemasCompileOnFirstUse(t *testing.T) {
	const n = 10_000
	prefix := lib + "lazy"
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0",
		fmt.Sprintf("--max-event-schemas=%d", n)}
	inst := harness.Start(t, bin, args...)
	if r := inst.Do("POST", "/api/v1/restore", harness.Token, schemaLines(prefix, n)); r.StatusCode != 200 || !strings.Contains(string(r.Body), fmt.Sprintf(`"schemas":%d,`, n)) {
		t.Fatalf("restore of %d schemas: %d %s", n, r.StatusCode, r.Body)
	}
	checkError(t, register(t, inst, lib+"one-more", bookLostSchema), 409, "state conflict: too many event schemas")
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}

	began := time.Now()
	inst = harness.Start(t, bin, args...)
	t.Logf("restarted with %d schemas in %s", n, time.Since(began).Round(time.Millisecond))
	if registered, compiled := schemaFigures(t, inst); registered != n || compiled != 0 {
		t.Fatalf("after a restart: %v schemas registered, %v compiled", registered, compiled)
	}
	lines := stream(t, inst, "/api/v1/read-event-types", "")
	if len(lines) != n {
		t.Fatalf("%d event types, want %d", len(lines), n)
	}
	for _, i := range []int{0, 4711, n - 1} {
		want := fmt.Sprintf(`{"eventType":"%s-%05d","isPhantom":true,"schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}`, prefix, i)
		if string(lines[i].Payload) != want {
			t.Fatalf("event type %d: %s, want %s", i, lines[i].Payload, want)
		}
	}
	eventType := fmt.Sprintf("%s-%05d", prefix, 4711)
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, `{"events":[{"source":"https://x","subject":"/a","type":"`+eventType+`","data":{"n":"one"}}]}`), 409,
		"schema conflict: event candidate does not match schema: at '/n': expected integer, but got string")
	mustWrite(t, inst, `{"events":[{"source":"https://x","subject":"/a","type":"`+eventType+`","data":{"n":1}}]}`)
	if registered, compiled := schemaFigures(t, inst); registered != n || compiled != 1 {
		t.Fatalf("after writes of one type: %v schemas registered, %v compiled", registered, compiled)
	}
}
