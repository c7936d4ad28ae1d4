package e2e

import (
	"encoding/json"
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
