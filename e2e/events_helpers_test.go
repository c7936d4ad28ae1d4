package e2e

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// eventKeys are the keys of an event in order; trace keys only when set.
var eventKeys = []string{"source", "subject", "type", "traceparent", "tracestate", "specversion", "id", "time", "datacontenttype", "predecessorhash", "data", "hash", "signature"}

// storedEvent is an event as the API emits it, with its raw JSON.
type storedEvent struct {
	Source          string          `json:"source"`
	Subject         string          `json:"subject"`
	Type            string          `json:"type"`
	TraceParent     *string         `json:"traceparent"`
	TraceState      *string         `json:"tracestate"`
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Time            string          `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	PredecessorHash string          `json:"predecessorhash"`
	Data            json.RawMessage `json:"data"`
	Hash            string          `json:"hash"`
	Signature       *string         `json:"signature"`
	raw             json.RawMessage
}

var eventTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{8}[1-9]Z$`)

// parseEvent decodes one emitted event and checks its keys, their order and
// the rules every event obeys.
func parseEvent(t *testing.T, raw json.RawMessage) storedEvent {
	t.Helper()
	keys := keyOrder(t, raw)
	want := make([]string, 0, len(eventKeys))
	for _, k := range eventKeys {
		if (k == "traceparent" || k == "tracestate") && !bytes.Contains(raw, []byte(`"`+k+`":`)) {
			continue
		}
		want = append(want, k)
	}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("event keys %v, want %v: %s", keys, want, raw)
	}
	var e storedEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	e.raw = raw
	if e.SpecVersion != "1.0" || e.DataContentType != "application/json" || !eventTime.MatchString(e.Time) {
		t.Fatalf("event fields: %s", raw)
	}
	// An erased event's hash covers its original data (docs/api.md §4.16).
	if got := recomputeHash(e); got != e.Hash && !bytes.HasPrefix(e.Data, []byte(`{"$erased":`)) {
		t.Fatalf("client-side hash %s differs from %s: %s", got, e.Hash, raw)
	}
	return e
}

// recomputeHash computes an event's hash from its emitted fields, as a
// client SDK does (docs/api.md §2.5).
func recomputeHash(e storedEvent) string {
	meta := strings.Join([]string{e.SpecVersion, e.ID, e.PredecessorHash, e.Time, e.Source, e.Subject, e.Type, e.DataContentType}, "|")
	metaSum := sha256.Sum256([]byte(meta))
	dataSum := sha256.Sum256(e.Data)
	sum := sha256.Sum256([]byte(hex.EncodeToString(metaSum[:]) + hex.EncodeToString(dataSum[:])))
	return hex.EncodeToString(sum[:])
}

func verifySignature(t *testing.T, public ed25519.PublicKey, e storedEvent) {
	t.Helper()
	if e.Signature == nil || !strings.HasPrefix(*e.Signature, "esdb:signature:v1:") {
		t.Fatalf("signature %v", e.Signature)
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(*e.Signature, "esdb:signature:v1:"))
	if err != nil || !ed25519.Verify(public, []byte(e.Hash), sig) {
		t.Fatalf("signature does not verify over the hash: %s", e.raw)
	}
}

// writeEvents posts body to write-events and, on 200, returns the events.
func writeEvents(t *testing.T, inst harness.Target, body string) (harness.Response, []storedEvent) {
	t.Helper()
	r := inst.Do("POST", "/api/v1/write-events", harness.Token, body)
	if r.StatusCode != 200 {
		return r, nil
	}
	checkCommonHeaders(t, r)
	if r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("write-events Content-Type %q", r.Header.Get("Content-Type"))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(r.Body, &raws); err != nil {
		t.Fatalf("write-events body: %v: %s", err, r.Body)
	}
	events := make([]storedEvent, len(raws))
	for i, raw := range raws {
		events[i] = parseEvent(t, raw)
	}
	return r, events
}

// mustWrite writes body and fails unless the answer is 200.
func mustWrite(t *testing.T, inst harness.Target, body string) []storedEvent {
	t.Helper()
	r, events := writeEvents(t, inst, body)
	if r.StatusCode != 200 {
		t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
	}
	return events
}

// candidates builds a write-events body of events on subject/type pairs.
func candidates(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, fmt.Sprintf(`{"source":"https://library.example.com","subject":%q,"type":%q,"data":{"n":%d}}`, pairs[i], pairs[i+1], i/2))
	}
	return `{"events":[` + strings.Join(parts, ",") + `]}`
}

// ndjsonLine is one line of a stream.
type ndjsonLine struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// stream posts body to path and returns its NDJSON lines, checking the
// stream's form: 200, application/x-ndjson, compact lines ending in \n.
func stream(t *testing.T, inst harness.Target, path, body string) []ndjsonLine {
	t.Helper()
	return streamLines(t, inst.Do("POST", path, harness.Token, body), path+" "+body)
}

// streamLines checks the form of a stream response and returns its lines.
func streamLines(t *testing.T, r harness.Response, what string) []ndjsonLine {
	t.Helper()
	checkCommonHeaders(t, r)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%s: %d %q %s", what, r.StatusCode, r.Header.Get("Content-Type"), r.Body)
	}
	if len(r.Body) > 0 && !bytes.HasSuffix(r.Body, []byte("\n")) {
		t.Fatalf("stream does not end with a newline: %q", r.Body)
	}
	var lines []ndjsonLine
	for _, raw := range bytes.SplitAfter(r.Body, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil || compact.Len() != len(raw)-1 {
			t.Fatalf("line is not compact JSON: %q", raw)
		}
		var l ndjsonLine
		if err := json.Unmarshal(raw, &l); err != nil || l.Type == "" || l.Payload == nil {
			t.Fatalf("line %q lacks type or payload", raw)
		}
		lines = append(lines, l)
	}
	return lines
}

// readIDs reads events with body and returns their ids joined by commas.
func readIDs(t *testing.T, inst harness.Target, body string) string {
	t.Helper()
	var ids []string
	for _, l := range stream(t, inst, "/api/v1/read-events", body) {
		if l.Type != "event" {
			t.Fatalf("read-events line of type %q: %s", l.Type, l.Payload)
		}
		ids = append(ids, parseEvent(t, l.Payload).ID)
	}
	return strings.Join(ids, ",")
}

func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keyOrder returns the keys of the JSON object raw in their order.
func keyOrder(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
