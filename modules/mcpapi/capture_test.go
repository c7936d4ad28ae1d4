package mcpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// ndjson writes lines to c as a route's stream does, a line per write
// split at an odd place, and returns how many writes succeeded.
func ndjson(c *capture, lines ...string) int {
	c.Header().Set("Content-Type", "application/x-ndjson")
	c.WriteHeader(http.StatusOK)
	for i, line := range lines {
		half := len(line) / 2
		if _, err := c.Write([]byte(line[:half])); err != nil {
			return i
		}
		if _, err := c.Write([]byte(line[half:] + "\n")); err != nil {
			return i
		}
	}
	return len(lines)
}

func eventLine(id int, data string) string {
	return fmt.Sprintf(`{"type":"event","payload":{"id":"%d","data":%q}}`, id, data)
}

func TestCaptureCutsAtMaxResults(t *testing.T) {
	cancelled := false
	c := newCapture("event", 2, func() { cancelled = true })
	written := ndjson(c, `{"type":"heartbeat","payload":{}}`, eventLine(0, "a"), eventLine(1, "b"), eventLine(2, "c"), eventLine(3, "d"))
	// The line that is cut off is taken whole; the writes after it fail.
	if len(c.items) != 2 || !c.cut || !cancelled || written != 4 {
		t.Fatalf("items %d, cut %v, cancelled %v, %d lines written", len(c.items), c.cut, cancelled, written)
	}
}

func TestCaptureKeepsAllUpToMax(t *testing.T) {
	c := newCapture("event", 2, func() { t.Fatal("cancelled") })
	ndjson(c, eventLine(0, "a"), eventLine(1, "b"))
	if len(c.items) != 2 || c.cut {
		t.Fatalf("items %d, cut %v", len(c.items), c.cut)
	}
}

func TestCaptureCutsAtMaxBytes(t *testing.T) {
	big := strings.Repeat("x", MaxBytes/3)
	c := newCapture("event", 1000, func() {})
	ndjson(c, eventLine(0, big), eventLine(1, big), eventLine(2, big), eventLine(3, big))
	if len(c.items) != 2 || !c.cut {
		t.Fatalf("items %d, cut %v", len(c.items), c.cut)
	}
	// One item larger than the bound still passes, or nothing could.
	c = newCapture("event", 1000, func() {})
	ndjson(c, eventLine(0, strings.Repeat("x", MaxBytes+1)))
	if len(c.items) != 1 || c.cut {
		t.Fatalf("one large item: items %d, cut %v", len(c.items), c.cut)
	}
}

func TestCaptureKeepsTheErrorLine(t *testing.T) {
	c := newCapture("row", 10, func() {})
	ndjson(c, `{"type":"row","payload":1}`, `{"type":"error","payload":{"error":"query timed out"}}`)
	if len(c.items) != 1 || c.failure != "query timed out" {
		t.Fatalf("items %d, failure %q", len(c.items), c.failure)
	}
}

func TestCaptureKeepsJSONAndErrorsWhole(t *testing.T) {
	c := newCapture("event", 1, func() {})
	c.Header().Set("Content-Type", "text/plain; charset=utf-8")
	c.WriteHeader(http.StatusForbidden)
	_, _ = c.Write([]byte("forbidden: insufficient permissions\n"))
	if c.streamed() || c.status != http.StatusForbidden || c.body.String() != "forbidden: insufficient permissions\n" {
		t.Fatalf("status %d, body %q", c.status, c.body.String())
	}
	c = newCapture("", 1, func() {})
	c.Header().Set("Content-Type", "application/json")
	_, _ = c.Write([]byte(`[{"id":"0"},{"id":"1"}]`))
	if c.streamed() || c.status != http.StatusOK || c.body.String() != `[{"id":"0"},{"id":"1"}]` {
		t.Fatalf("status %d, body %q", c.status, c.body.String())
	}
}

func TestNextEvents(t *testing.T) {
	for _, tc := range []struct{ args, last, want string }{
		{`{"subject":"/"}`, `{"id":"41"}`, `{"options":{"lowerBound":{"id":"42","type":"inclusive"}},"subject":"/"}`},
		{`{"subject":"/b","options":{"recursive":true,"lowerBound":{"id":"3","type":"exclusive"},"upperBound":{"id":"90","type":"inclusive"}}}`, `{"id":"9"}`,
			`{"options":{"lowerBound":{"id":"10","type":"inclusive"},"recursive":true,"upperBound":{"id":"90","type":"inclusive"}},"subject":"/b"}`},
		{`{"subject":"/","options":{"order":"antichronological"}}`, `{"id":"7"}`, `{"options":{"order":"antichronological","upperBound":{"id":"6","type":"inclusive"}},"subject":"/"}`},
		{`{"subject":"/","options":{"fromLatestEvent":{"subject":"/a","type":"x.y","ifEventIsMissing":"read-nothing"}}}`, `{"id":"5"}`,
			`{"options":{"lowerBound":{"id":"6","type":"inclusive"}},"subject":"/"}`},
		{`{"subject":"/"}`, `{"id":"x"}`, ``},
	} {
		got := nextEvents(json.RawMessage(tc.args), json.RawMessage(tc.last))
		if string(got) != tc.want {
			t.Errorf("nextEvents(%s, %s) = %s, want %s", tc.args, tc.last, got, tc.want)
		}
	}
}

// TestToolsAreWellFormed builds the server of every tool: the SDK panics
// on an input schema that is not an object.
func TestToolsAreWellFormed(t *testing.T) {
	for _, writes := range []bool{false, true} {
		seen := map[string]bool{}
		for _, tl := range tools(writes) {
			var schema map[string]any
			if err := json.Unmarshal([]byte(tl.input), &schema); err != nil || schema["type"] != "object" {
				t.Fatalf("%s: input schema %v %v", tl.name, schema, err)
			}
			if seen[tl.name] || tl.write != (tl.name == "esdb_write_events" || tl.name == "esdb_register_event_schema") || (tl.next != nil) != (tl.name == "esdb_read_events") {
				t.Fatalf("tool %+v", tl)
			}
			seen[tl.name] = true
		}
		New(Options{AllowWrites: writes, MaxResults: 10})
	}
}
