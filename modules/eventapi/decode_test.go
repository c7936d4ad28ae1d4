package eventapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/storedb"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

const validEvent = `{"source":"https://library.example.com","subject":"/books/42","type":"com.example.library.book-acquired","data":{"title":"x"}}`

// testCondition makes the store condition of a query precondition.
func testCondition(p *eventql.Program) store.Condition {
	return storedb.NewCondition(p, event.NewEmitter(nil), eventql.Options{})
}

func wantError(t *testing.T, err error, message string) {
	t.Helper()
	var apiErr *httpkit.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Message != message {
		t.Fatalf("got %v, want 400 %q", err, message)
	}
}

func TestDecodeWriteErrors(t *testing.T) {
	withEvent := func(fields string) string {
		return `{"events":[{` + fields + `}]}`
	}
	base := `"source":"https://x","subject":"/a","type":"io.example.thing"`
	cases := []struct {
		name, body, want string
	}{
		{"empty body", ``, "invalid request: events must contain at least one event"},
		{"null", `null`, "invalid request: events must contain at least one event"},
		{"no events", `{"events":[]}`, "invalid request: events must contain at least one event"},
		{"malformed", `{"events":[`, "invalid request: malformed JSON: unexpected end of JSON input where a value was expected at offset 11"},
		{"wrong type", `{"events":{}}`, "invalid request: malformed JSON: expected an array at offset 10"},
		{"wrong field type", `{"events":[{"source":5}]}`, "invalid request: malformed JSON: expected a string at offset 21"},
		{"trailing data", `{"events":[]} {}`, "invalid request: malformed JSON: invalid character '{' after top-level value at offset 14"},
		{"syntax error after a bad event", `{"events":[{"source":"bad"},{"source":}]}`, "invalid request: malformed JSON: invalid character '}' where a value was expected at offset 38"},
		{"bad data after bad source", `{"events":[{"source":"bad","data":{"n":1e999}}]}`, "invalid source: 'bad'"},
		{"too many", `{"events":[` + strings.Repeat(validEvent+",", 10_000) + validEvent + `]}`, "invalid request: too many events: 10001 exceeds the limit of 10000"},
		{"too deep", `{"events":[{"data":` + strings.Repeat(`{"a":`, 63) + `1` + strings.Repeat(`}`, 63) + `}]}`, "invalid request: JSON nesting depth exceeds the limit of 64"},
		{"bad source first", withEvent(`"source":"my-app","subject":"test","type":""`), "invalid source: 'my-app'"},
		{"missing source", withEvent(`"subject":"/a"`), "invalid source: ''"},
		{"bad subject", withEvent(`"source":"https://x","subject":"test","type":""`), "invalid subject: 'test'"},
		{"empty subject", withEvent(`"source":"https://x","subject":"","type":"io.example.thing"`), "invalid subject: ''"},
		{"bad type", withEvent(`"source":"https://x","subject":"/a","type":"io.eventsourcingdb.test."`), "invalid event type: 'io.eventsourcingdb.test.'"},
		{"missing data", withEvent(base), "invalid data: data must be a JSON object"},
		{"null data", withEvent(base + `,"data":null`), "invalid data: data must be a JSON object"},
		{"array data", withEvent(base + `,"data":[1]`), "invalid data: data must be a JSON object"},
		{"string data", withEvent(base + `,"data":"x"`), "invalid data: data must be a JSON object"},
		{"number out of range", withEvent(base + `,"data":{"n":1e999}`), "invalid data: number 1e999 is out of range"},
		{"data too large", withEvent(base + `,"data":{"s":"` + strings.Repeat("x", 100) + `"}`), "invalid data: event data exceeds the limit of 64 bytes"},
		{"bad traceparent", withEvent(base + `,"data":{},"traceparent":"00-xyz"`), "invalid traceparent: '00-xyz'"},
		{"tracestate alone", withEvent(base + `,"data":{},"tracestate":"k=v"`), "invalid tracestate: tracestate requires traceparent"},
		{"long tracestate", withEvent(base + `,"data":{},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"` + strings.Repeat("k", 513) + `"`), "invalid tracestate: longer than 512 bytes"},
		{"unknown precondition", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectHappy","payload":{}}]}`, "invalid precondition: unknown type 'isSubjectHappy'"},
		{"missing payload", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectPristine"}]}`, "invalid precondition: missing payload"},
		{"bad precondition subject", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectPopulated","payload":{"subject":"x"}}]}`, "invalid precondition: invalid subject: 'x'"},
		{"bad precondition id", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectOnEventId","payload":{"subject":"/a","eventId":"01"}}]}`, "invalid precondition: invalid event id: '01'"},
		{"eventql static error", `{"events":[` + validEvent + `],"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events WHERE x.id == 1 PROJECT INTO COUNT() == 0"}}]}`, "invalid precondition: 1:24: unknown alias 'x'"},
		{"eventql empty", `{"events":[` + validEvent + `],"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":" // nothing"}}]}`, "invalid precondition: empty query"},
		{"eventql missing", `{"events":[` + validEvent + `],"preconditions":[{"type":"isEventQlQueryTrue","payload":{}}]}`, "invalid precondition: empty query"},
		{"eventql not a string", `{"events":[` + validEvent + `],"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":1}}]}`, "invalid precondition: malformed payload: field 'query' must be a string"},
		{"preconditions not an array", `{"events":[` + validEvent + `],"preconditions":{"type":"isSubjectPristine"}}`, "invalid request: malformed JSON: preconditions must be a JSON array"},
		{"precondition not an object", `{"events":[` + validEvent + `],"preconditions":[1]}`, "invalid request: malformed JSON: preconditions must be a JSON object"},
		{"precondition type not a string", `{"events":[` + validEvent + `],"preconditions":[{"type":1,"payload":{}}]}`, "invalid request: malformed JSON: field 'type' must be a string"},
		{"malformed second before bad first", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectHappy"},{"type":true}]}`, "invalid request: malformed JSON: field 'type' must be a string"},
		{"null precondition", `{"events":[` + validEvent + `],"preconditions":[null]}`, "invalid precondition: unknown type ''"},
		{"payload not an object", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectPristine","payload":"/a"}]}`, "invalid precondition: malformed payload: payload must be a JSON object"},
		{"subject not a string", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectPristine","payload":{"subject":["/a"]}}]}`, "invalid precondition: malformed payload: field 'subject' must be a string"},
		{"null subject", `{"events":[` + validEvent + `],"preconditions":[{"type":"isSubjectPristine","payload":{"subject":null}}]}`, "invalid precondition: invalid subject: ''"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeWrite([]byte(tc.body), 64, testCondition)
			wantError(t, err, tc.want)
		})
	}
}

func TestDecodeWrite(t *testing.T) {
	body := `{"EVENTS":[{"source":"https://x","subject":"/a","type":"io.example.thing","data":{"b":1.50,"a":"<"},"traceParent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","traceState":"k=v","extra":1},
		{"source":"https://x","subject":"/b","type":"io.example.thing","data":{},"traceparent":null,"tracestate":""}],
		"preconditions":[{"Type":"isSubjectPristine","extra":[1],"payload":{"Subject":"/a","other":{}}},{"payload":{"subject":"/b","eventID":"12"},"type":"isSubjectOnEventId"},
		{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events PROJECT INTO COUNT() == 0"}}]}`
	candidates, preconditions, err := DecodeWrite([]byte(body), 1<<20, testCondition)
	if err != nil {
		t.Fatal(err)
	}
	want := []event.Candidate{
		{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"a":"\u003c","b":1.5}`), TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", TraceState: "k=v"},
		{Source: "https://x", Subject: "/b", Type: "io.example.thing", Data: []byte(`{}`)},
	}
	for i := range want {
		got := candidates[i]
		if got.Source != want[i].Source || got.Subject != want[i].Subject || string(got.Data) != string(want[i].Data) ||
			got.TraceParent != want[i].TraceParent || got.TraceState != want[i].TraceState {
			t.Errorf("candidate %d: got %+v, want %+v", i, got, want[i])
		}
	}
	if len(preconditions) != 3 || preconditions[0] != (store.Precondition{Kind: store.SubjectPristine, Subject: "/a"}) ||
		preconditions[1] != (store.Precondition{Kind: store.SubjectOnEventID, Subject: "/b", EventID: 12}) ||
		preconditions[2].Kind != store.ConditionHolds || preconditions[2].Condition == nil {
		t.Fatalf("preconditions %+v", preconditions)
	}
}

func TestDecodeRead(t *testing.T) {
	opts, err := DecodeRead([]byte(`{"subject":"/books","options":{"recursive":true,"order":"antichronological","upperBound":{"id":"5","type":"exclusive"},
		"fromLatestEvent":{"subject":"/books/42","type":"com.example.library.book-returned","ifEventIsMissing":"observe-everything"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Subject != "/books" || !opts.Recursive || !opts.Descending || *opts.Upper != (store.Bound{ID: 5}) ||
		*opts.FromLatest != (store.FromLatest{Subject: "/books/42", Type: "com.example.library.book-returned", ReadEverything: true}) {
		t.Fatalf("options %+v", opts)
	}
	if opts, err := DecodeRead([]byte(`{"subject":"/"}`)); err != nil || opts.Recursive || opts.Lower != nil {
		t.Fatalf("no options: %+v %v", opts, err)
	}

	for body, want := range map[string]string{
		`{}`:                                    "invalid subject: ''",
		`{"subject":"test"}`:                    "invalid subject: 'test'",
		`{"subject":"/","options":{"limit":1}}`: "invalid request: unknown option 'limit'",
		`{"subject":"/","options":{"order":"up"}}`:                                                                                                                    "invalid request: unknown order 'up', expected 'chronological' or 'antichronological'",
		`{"subject":"/","options":{"lowerBound":{"id":"hello","type":"inclusive"}}}`:                                                                                  "invalid event id: 'hello'",
		`{"subject":"/","options":{"lowerBound":{"id":"-1","type":"inclusive"}}}`:                                                                                     "invalid event id: '-1'",
		`{"subject":"/","options":{"upperBound":{"id":"1","type":"open"}}}`:                                                                                           "invalid request: unknown bound type 'open', expected 'inclusive' or 'exclusive'",
		`{"subject":"/","options":{"fromLatestEvent":{"subject":"","type":"a.bc.d","ifEventIsMissing":"read-nothing"}}}`:                                              "invalid subject: ''",
		`{"subject":"/","options":{"fromLatestEvent":{"subject":"/a","type":"","ifEventIsMissing":"read-nothing"}}}`:                                                  "invalid event type: ''",
		`{"subject":"/","options":{"fromLatestEvent":{"subject":"/a","type":"ab.c.d","ifEventIsMissing":"wait-for-event"}}}`:                                          "invalid request: unknown ifEventIsMissing 'wait-for-event', expected 'read-nothing' or 'read-everything'",
		`{"subject":"/","options":{"lowerBound":{"id":"1","type":"inclusive"},"fromLatestEvent":{"subject":"/a","type":"ab.c.d","ifEventIsMissing":"read-nothing"}}}`: "invalid request: lowerBound and fromLatestEvent cannot be combined",
		`{"subject":"/","options":{"recursive":"yes"}}`:                                                                                                               "invalid request: malformed JSON: field 'recursive' must be a boolean",
	} {
		_, err := DecodeRead([]byte(body))
		wantError(t, err, want)
	}
	for body, want := range map[string]string{
		`{}`:             "invalid query: empty query",
		`{"query":null}`: "invalid query: empty query",
		`{"query":""}`:   "invalid query: empty query",
		`{"query":"FROM e IN events WHERE e.id == \"1\""}`: "invalid query: 1:35: expected PROJECT INTO, found end of query",
		`{"query":1}`: "invalid request: malformed JSON: field 'query' must be a string",
	} {
		_, err := DecodeQuery([]byte(body))
		wantError(t, err, want)
	}
	if _, err := DecodeQuery([]byte(`{"query":"FROM e IN events PROJECT INTO e","other":1}`)); err != nil {
		t.Fatalf("valid query: %v", err)
	}
	if _, err := DecodeSubjects([]byte(`{"baseSubject":""}`)); err == nil {
		t.Fatal("empty base subject accepted")
	}
}

// FuzzDecodeWrite checks that any body either fails with a 400 or yields
// candidates that obey every rule: valid fields, canonical data within the
// limit, trace state only with a trace parent.
func FuzzDecodeWrite(f *testing.F) {
	for _, seed := range []string{
		`{"events":[` + validEvent + `]}`, ``, `null`, `{"events":[]}`, `{"events":[{}]}`,
		`{"events":[{"source":"https://x","subject":"/a","type":"io.example.t","data":{"n":1e3,"s":"\u2028<"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}],"preconditions":[{"type":"isSubjectOnEventId","payload":{"subject":"/a","eventId":"3"}}]}`,
		`{"events":[{"source":"tag:x,2023:y","subject":"/","type":"ab.c.d","data":{"a":[[[{}]]]}}],"preconditions":[{"type":"isSubjectPristine","payload":null}]}`,
		`{"events":[` + validEvent + `],"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events WHERE e.type == 'x' PROJECT INTO COUNT() == 0"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		candidates, preconditions, err := DecodeWrite(body, 4096, testCondition)
		if trimmed := strings.TrimSpace(string(body)); err == nil && trimmed != "" && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if err != nil {
			var apiErr *httpkit.Error
			if !errors.As(err, &apiErr) || apiErr.Status != 400 || strings.Contains(apiErr.Message, "\n") {
				t.Fatalf("error %v is not a one-line 400", err)
			}
			return
		}
		if len(candidates) == 0 || len(candidates) > MaxEventsPerWrite {
			t.Fatalf("%d candidates accepted", len(candidates))
		}
		for _, c := range candidates {
			if !event.ValidSource(c.Source) || !event.ValidSubject(c.Subject) || !event.ValidType(c.Type) || len(c.Data) > 4096 {
				t.Fatalf("invalid candidate accepted: %+v", c)
			}
			if (c.TraceState != "" && c.TraceParent == "") || (c.TraceParent != "" && !event.ValidTraceParent(c.TraceParent)) {
				t.Fatalf("invalid trace context accepted: %+v", c)
			}
			again, err := jsonscan.Canonicalize(c.Data)
			if err != nil || string(again) != string(c.Data) || !json.Valid(c.Data) {
				t.Fatalf("data not canonical: %s", c.Data)
			}
		}
		for _, p := range preconditions {
			if (p.Kind == store.ConditionHolds) != (p.Condition != nil) || (p.Condition == nil && !event.ValidSubject(p.Subject)) {
				t.Fatalf("invalid precondition accepted: %+v", p)
			}
		}
	})
}

func TestStoreErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		body   string
		result string
	}{
		{store.ErrPreconditionFailed, 409, "state conflict: precondition failed", resultPreconditionFailed},
		{&store.InvalidPreconditionError{Err: errors.New("query must yield a BOOLEAN, got INT")}, 400, "invalid precondition: query must yield a BOOLEAN, got INT", resultInvalid},
		{store.ErrClosed, 503, "service unavailable: shutting down", resultUnavailable},
		{&store.InvalidPreconditionError{Err: &eventql.InvalidError{Msg: "query failed: internal error: storage read failed",
			Err: &eventql.Error{Msg: "internal error: storage read failed", Err: fmt.Errorf("read events: %w", store.ErrUnavailable)}}},
			503, "service unavailable: storage unreachable", resultUnavailable},
		{&store.FailureError{Full: true, Err: fmt.Errorf("pebble: fatal commit error: %w", syscall.ENOSPC)}, 507, "insufficient storage: no space left on device", resultStorageError},
		{&store.FailureError{Err: errors.New("injected sync failure")}, 500, "internal error: storage failure", resultStorageError},
		{fmt.Errorf("read schema: %w", errors.New("open /data/000042.sst: input/output error")), 500, "internal error: unexpected failure", resultStorageError},
	}
	for _, tc := range cases {
		apiErr, result := translateStoreError(tc.err)
		if apiErr.Status != tc.status || apiErr.Message != tc.body || result != tc.result {
			t.Errorf("translateStoreError(%v) = %d %q %s, want %d %q %s", tc.err, apiErr.Status, apiErr.Message, result, tc.status, tc.body, tc.result)
		}
	}
}

// TestStoreErrorLogsWhatItDoesNotTell: the text of an unexpected failure,
// and of a failed read inside a precondition's query, never reaches the
// answer (it may name files, hosts or internals); the log has it, once.
func TestStoreErrorLogsWhatItDoesNotTell(t *testing.T) {
	const secret = "open /data/000042.sst: input/output error"
	cases := []struct {
		name   string
		err    error
		status int
		body   string
	}{
		{"unexpected", fmt.Errorf("read schema: %w", errors.New(secret)), 500, "internal error: unexpected failure"},
		{"precondition read", &store.InvalidPreconditionError{Err: &eventql.InvalidError{
			Msg: "query failed: internal error: storage read failed",
			Err: &eventql.Error{Msg: "internal error: storage read failed", Err: errors.New(secret)},
		}}, 400, "invalid precondition: query failed: internal error: storage read failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := zapobserver.New(zap.DebugLevel)
			a := &API{log: zap.New(core)}
			rec := httptest.NewRecorder()
			httpkit.WriteError(rec, a.StoreError(tc.err))
			if rec.Code != tc.status || rec.Body.String() != tc.body+"\n" || strings.Contains(rec.Body.String(), "000042") {
				t.Fatalf("answer %d %q, want %d %q", rec.Code, rec.Body.String(), tc.status, tc.body+"\n")
			}
			entries := logs.All()
			if len(entries) != 1 || entries[0].Level != zap.ErrorLevel || !strings.Contains(fmt.Sprint(entries[0].ContextMap()["error"]), secret) {
				t.Fatalf("log %+v, want one ERROR entry with the error %q", entries, secret)
			}
		})
	}
	core, logs := zapobserver.New(zap.DebugLevel)
	a := &API{log: zap.New(core)}
	if apiErr := a.StoreError(store.ErrPreconditionFailed); apiErr.Status != 409 || logs.Len() != 0 {
		t.Fatalf("a failed precondition: %d, %d log entries, want 409 and none", apiErr.Status, logs.Len())
	}
}
