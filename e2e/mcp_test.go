package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// The MCP client of the official TypeScript SDK (mcp/client.mjs) and the
// official conformance suite, installed from mcp/package-lock.json.

var (
	mcpInstall    sync.Once
	mcpInstallErr error
)

// mcpNode returns the node binary of e2e/mcp (node 22, which the suite
// needs), installing the packages of its lock file first when they are
// missing or older than it.
func mcpNode(t *testing.T) string {
	t.Helper()
	mcpInstall.Do(func() {
		lock, err := os.Stat("mcp/package-lock.json")
		if err != nil {
			mcpInstallErr = err
			return
		}
		if installed, err := os.Stat("mcp/node_modules/.package-lock.json"); err == nil && !installed.ModTime().Before(lock.ModTime()) {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = "mcp"
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpInstallErr = fmt.Errorf("npm ci in e2e/mcp: %v\n%s", err, out)
		}
	})
	if mcpInstallErr != nil {
		t.Fatal(mcpInstallErr)
	}
	node, err := filepath.Abs("mcp/node_modules/.bin/node")
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// mcpCall is a tool call of the client.
type mcpCall struct {
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Resource  string `json:"resource,omitempty"` // a resource to read instead
}

// mcpOutcome is what the client saw.
type mcpOutcome struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Instructions string `json:"instructions"`
	SessionID    string `json:"sessionId"`
	Tools        []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations struct {
			ReadOnlyHint bool `json:"readOnlyHint"`
		} `json:"annotations"`
	} `json:"tools"`
	Resources []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
	} `json:"resources"`
	Results []mcpResult `json:"results"`
	Error   string      `json:"error"`
}

// mcpResult is the result of one tool call.
type mcpResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
	Thrown     string          `json:"thrown"`
	Contents   []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"contents"` // of a resource
}

// text is the text of the result's one text block.
func (r mcpResult) text(t *testing.T) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("a result's content is not one text block: %+v", r)
	}
	return r.Content[0].Text
}

// structured decodes the result's structured content into v.
func (r mcpResult) structured(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Structured, v); err != nil {
		t.Fatalf("structured content %s: %v", r.Structured, err)
	}
}

// mcpClient connects the SDK's client to inst's /mcp with token (none
// when empty), lists the tools, makes the calls and ends the session.
func mcpClient(t *testing.T, inst *harness.Instance, token string, calls ...mcpCall) mcpOutcome {
	t.Helper()
	node := mcpNode(t)
	encoded, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", inst.URL("http")+"/mcp", token, string(encoded))
	cmd.Dir = "mcp"
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the MCP client: %v\n%s", err, stderr.String())
	}
	var o mcpOutcome
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("the MCP client's output %q: %v", out, err)
	}
	if o.Error == "" && len(o.Results) != len(calls) {
		t.Fatalf("%d results of %d calls", len(o.Results), len(calls))
	}
	return o
}

// sameJSON fails unless got and want are equal JSON values.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\ngot  %v\nwant %v", what, g, w)
	}
}

// payloads returns the payloads of the lines of type typ of a route's
// stream.
func payloads(t *testing.T, inst harness.Target, path, body, typ string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, l := range stream(t, inst, path, body) {
		if l.Type == typ {
			out = append(out, l.Payload)
		}
	}
	return out
}

// readTools are the tools without --mcp-allow-writes.
var readTools = []string{"esdb_ping", "esdb_read_event_type", "esdb_read_event_types", "esdb_read_events", "esdb_read_subjects",
	"esdb_run_eventql_query", "esdb_verify_api_token", "eventstore_diagnostics", "eventstore_read_data_indexes", "eventstore_read_subscriptions"}

// TestMCPTools calls every tool with the SDK's client and compares its
// structured content with the answer of the route it mirrors; answers
// longer than --mcp-max-results, or than 1 MiB, are cut and say how to
// continue, and the continuations read the rest.
func TestMCPTools(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--mcp-enabled", "--mcp-max-results=4")...)
	mustWrite(t, inst, candidates("/books/0", "io.example.book-acquired", "/books/1", "io.example.book-acquired", "/books/2", "io.example.book-acquired",
		"/books/0", "io.example.book-borrowed", "/books/1", "io.example.book-borrowed", "/books/0", "io.example.book-returned",
		"/books/2", "io.example.book-borrowed", "/books/2", "io.example.book-returned", "/books/1", "io.example.book-returned", "/books/0", "io.example.book-borrowed"))
	for path, body := range map[string]string{
		"/api/v1/register-event-schema": `{"eventType":"io.example.book-borrowed","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}`,
		"/api/v1/register-data-index":   `{"name":"n","path":"/n"}`,
	} {
		if r := inst.Do("POST", path, harness.Token, body); r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, r.StatusCode, r.Body)
		}
	}
	waitUntil(t, 30*time.Second, func() bool { return dataIndexes(t, inst)["n"].State == "ready" })

	const query = `FROM e IN events WHERE e.type == "io.example.book-borrowed" PROJECT INTO { subject: e.subject, n: e.data.n }`
	o := mcpClient(t, inst, harness.Token,
		mcpCall{Name: "esdb_ping"},
		mcpCall{Name: "esdb_verify_api_token"},
		mcpCall{Name: "esdb_read_events", Arguments: map[string]any{"subject": "/", "options": map[string]any{"recursive": true}}},
		mcpCall{Name: "esdb_read_subjects", Arguments: map[string]any{"baseSubject": "/"}},
		mcpCall{Name: "esdb_read_event_types"},
		mcpCall{Name: "esdb_read_event_type", Arguments: map[string]any{"eventType": "io.example.book-borrowed"}},
		mcpCall{Name: "esdb_run_eventql_query", Arguments: map[string]any{"query": query}},
		mcpCall{Name: "eventstore_read_data_indexes"},
		mcpCall{Name: "eventstore_read_subscriptions"},
		mcpCall{Name: "eventstore_diagnostics"},
		mcpCall{Name: "esdb_write_events", Arguments: map[string]any{"events": []any{}}},
		mcpCall{Name: "esdb_run_eventql_query", Arguments: map[string]any{"query": "FROM e IN events"}},
		mcpCall{Resource: "eventstore://docs/eventql"},
		mcpCall{Resource: "eventstore://event-types"},
	)
	if o.Error != "" {
		t.Fatalf("the client: %s", o.Error)
	}
	if o.Server.Name != "eventstore" || o.SessionID == "" || !strings.Contains(o.Instructions, "esdb_run_eventql_query") {
		t.Fatalf("the handshake: server %+v, session %q, instructions %q", o.Server, o.SessionID, o.Instructions)
	}
	var names []string
	for _, tool := range o.Tools {
		names = append(names, tool.Name)
		var schema struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(tool.InputSchema, &schema) != nil || schema.Type != "object" || len(tool.Description) < 80 || !tool.Annotations.ReadOnlyHint {
			t.Fatalf("tool %s: schema %s, description %q, read-only %v", tool.Name, tool.InputSchema, tool.Description, tool.Annotations.ReadOnlyHint)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, readTools) {
		t.Fatalf("tools without --mcp-allow-writes: %v, want %v", names, readTools)
	}
	ping, verify, events, subjects, types, oneType, rows, indexes, subs, diagnostics, write, bad :=
		o.Results[0], o.Results[1], o.Results[2], o.Results[3], o.Results[4], o.Results[5], o.Results[6], o.Results[7], o.Results[8], o.Results[9], o.Results[10], o.Results[11]

	var pong struct{ Type string }
	ping.structured(t, &pong)
	if ping.IsError || pong.Type != "io.eventsourcingdb.api.ping-received" {
		t.Fatalf("esdb_ping: %+v", ping)
	}
	var verified struct{ Type string }
	verify.structured(t, &verified)
	if verify.IsError || verified.Type != "io.eventsourcingdb.api.api-token-verified" {
		t.Fatalf("esdb_verify_api_token: %+v", verify)
	}

	// Events: cut at 4, continued until the whole log is read.
	all := payloads(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`, "event")
	var read []json.RawMessage
	for page := events; ; {
		var got struct {
			Events       []json.RawMessage `json:"events"`
			Truncated    bool              `json:"truncated"`
			ContinueWith json.RawMessage   `json:"continueWith"`
		}
		page.structured(t, &got)
		read = append(read, got.Events...)
		text := page.text(t)
		if lines := strings.Split(text, "\n"); len(lines) != len(got.Events)+1 || got.Truncated != strings.Contains(lines[0], "cut") {
			t.Fatalf("the text of a page of events: %q", text)
		}
		if !got.Truncated {
			break
		}
		if len(got.Events) != 4 || !strings.Contains(text, string(got.ContinueWith)) {
			t.Fatalf("a cut page of events: %d events, text %q", len(got.Events), text)
		}
		var args map[string]any
		if err := json.Unmarshal(got.ContinueWith, &args); err != nil {
			t.Fatal(err)
		}
		page = mcpClient(t, inst, harness.Token, mcpCall{Name: "esdb_read_events", Arguments: args}).Results[0]
	}
	sameJSON(t, "esdb_read_events continued to the end", read, all)

	// Subjects: cut, with a hint instead of a continuation.
	var subjectsGot struct {
		Subjects  []json.RawMessage `json:"subjects"`
		Truncated bool              `json:"truncated"`
		Hint      string            `json:"hint"`
	}
	subjects.structured(t, &subjectsGot)
	sameJSON(t, "esdb_read_subjects", subjectsGot.Subjects, payloads(t, inst, "/api/v1/read-subjects", `{"baseSubject":"/"}`, "subject")[:4])
	if !subjectsGot.Truncated || !strings.Contains(subjectsGot.Hint, "baseSubject") {
		t.Fatalf("esdb_read_subjects over 5 subjects: %s", subjects.Structured)
	}

	var typesGot struct {
		EventTypes []json.RawMessage `json:"eventTypes"`
	}
	types.structured(t, &typesGot)
	sameJSON(t, "esdb_read_event_types", typesGot.EventTypes, payloads(t, inst, "/api/v1/read-event-types", `{}`, "eventType"))

	r := inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"io.example.book-borrowed"}`)
	sameJSON(t, "esdb_read_event_type", oneType.Structured, json.RawMessage(r.Body))

	var rowsGot struct {
		Rows []json.RawMessage `json:"rows"`
	}
	rows.structured(t, &rowsGot)
	sameJSON(t, "esdb_run_eventql_query", rowsGot.Rows, payloads(t, inst, "/api/v1/run-eventql-query", queryBody(query), "row"))

	var indexesGot struct {
		DataIndexes []json.RawMessage `json:"dataIndexes"`
	}
	indexes.structured(t, &indexesGot)
	sameJSON(t, "eventstore_read_data_indexes", indexesGot.DataIndexes, payloads(t, inst, "/api/v1/read-data-indexes", `{}`, "dataIndex"))

	var subsGot struct {
		Subscriptions []json.RawMessage `json:"subscriptions"`
	}
	subs.structured(t, &subsGot)
	if subs.IsError || len(subsGot.Subscriptions) != 0 {
		t.Fatalf("eventstore_read_subscriptions: %+v", subs)
	}

	var report map[string]json.RawMessage
	diagnostics.structured(t, &report)
	for _, key := range []string{"version", "system", "process", "options", "storage"} {
		if report[key] == nil {
			t.Fatalf("eventstore_diagnostics lacks %s: %s", key, diagnostics.Structured)
		}
	}
	if !strings.Contains(write.Thrown, "unknown tool") {
		t.Fatalf("esdb_write_events without --mcp-allow-writes: %+v", write)
	}
	want := inst.Do("POST", "/api/v1/run-eventql-query", harness.Token, queryBody("FROM e IN events"))
	if !bad.IsError || want.StatusCode != 400 || bad.text(t) != strings.TrimSpace(string(want.Body)) {
		t.Fatalf("a bad query: %+v, the route's %d %s", bad, want.StatusCode, want.Body)
	}

	// The resources: the EventQL reference, and the event types as the tool
	// gives them.
	if len(o.Resources) != 2 || o.Resources[0].URI != "eventstore://docs/eventql" || o.Resources[1].URI != "eventstore://event-types" {
		t.Fatalf("resources: %+v", o.Resources)
	}
	reference, err := os.ReadFile("../docs/eventql.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc := o.Results[12].Contents; len(doc) != 1 || doc[0].MIMEType != "text/markdown" || doc[0].Text != string(reference) {
		t.Fatalf("the EventQL reference resource: %+v", o.Results[12])
	}
	if listed := o.Results[13].Contents; len(listed) != 1 || listed[0].MIMEType != "application/json" {
		t.Fatalf("the event types resource: %+v", o.Results[13])
	} else {
		var got struct {
			EventTypes []json.RawMessage `json:"eventTypes"`
		}
		if err := json.Unmarshal([]byte(listed[0].Text), &got); err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "the event types resource", got.EventTypes, typesGot.EventTypes)
	}

	// Past 1 MiB an answer is cut before the event that would exceed it.
	big := strings.Repeat("x", 300_000)
	mustWrite(t, inst, fmt.Sprintf(`{"events":[%s]}`, strings.TrimSuffix(strings.Repeat(`{"source":"https://library.example.com","subject":"/big","type":"io.example.big","data":{"x":"`+big+`"}},`, 4), ",")))
	var bigGot struct {
		Events       []struct{ ID string } `json:"events"`
		Truncated    bool                  `json:"truncated"`
		ContinueWith struct {
			Options struct {
				LowerBound struct{ ID string } `json:"lowerBound"`
			} `json:"options"`
		} `json:"continueWith"`
	}
	mcpClient(t, inst, harness.Token, mcpCall{Name: "esdb_read_events", Arguments: map[string]any{"subject": "/big"}}).Results[0].structured(t, &bigGot)
	if len(bigGot.Events) != 3 || !bigGot.Truncated || bigGot.ContinueWith.Options.LowerBound.ID != "13" {
		t.Fatalf("events of 300 KB: %d of them, cut %v, continue with %+v", len(bigGot.Events), bigGot.Truncated, bigGot.ContinueWith)
	}
}

// conformanceScenarios are the scenarios of the official conformance
// suite (its active suite) that apply to a server of tools only. The
// others call the tools, resources, prompts and completions of the suite's
// own reference server (test_simple_text, test://static-text, ...), which
// a server of other tools answers "unknown tool" or "method not found".
var conformanceScenarios = []string{"server-initialize", "ping", "logging-set-level", "tools-list", "resources-list", "prompts-list",
	"server-sse-multiple-streams", "dns-rebinding-protection"}

// TestMCPConformance runs the official MCP conformance suite against /mcp,
// through a proxy on the loopback that adds the token (the suite sends
// none): every scenario that applies passes.
func TestMCPConformance(t *testing.T) {
	node := mcpNode(t)
	inst := harness.Start(t, bin, harness.Dev("--mcp-enabled")...)
	target, err := url.Parse(inst.URL("http"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the suite's Host header reaches the server, as it sent it
		r.Out.Header.Set("Authorization", "Bearer "+harness.Token)
	}}
	front := httptest.NewServer(proxy)
	defer front.Close()

	for _, scenario := range conformanceScenarios {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, node, "node_modules/@modelcontextprotocol/conformance/dist/index.js",
			"server", "--url", front.URL+"/mcp", "--scenario", scenario, "--output-dir", t.TempDir())
		cmd.Dir = "mcp"
		out, err := cmd.CombinedOutput()
		cancel()
		passed := regexp.MustCompile(`Passed: (\d+)/(\d+), 0 failed`).FindStringSubmatch(string(out))
		if err != nil || passed == nil || passed[1] != passed[2] || passed[1] == "0" {
			t.Errorf("conformance scenario %s: %v\n%s", scenario, err, out)
		}
	}
}

// TestMCPAccess checks every tool call against the token's grants as its
// route: refused with the route's text, audited with the token's name and
// the tool; a session serves only the token that started it.
func TestMCPAccess(t *testing.T) {
	file := accessFileOf(t, [2]string{"reader", `{read: ["/orders"]}`}, [2]string{"querier", `{query: true}`}, [2]string{"admin", `{admin: true}`})
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0", "--mcp-enabled")
	admin, reader := accessToken("admin"), accessToken("reader")
	if r := inst.Do("POST", "/api/v1/write-events", admin, candidates("/orders/1", "io.example.order-placed", "/books/1", "io.example.book-acquired")); r.StatusCode != 200 {
		t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
	}

	o := mcpClient(t, inst, reader,
		mcpCall{Name: "esdb_read_events", Arguments: map[string]any{"subject": "/orders", "options": map[string]any{"recursive": true}}},
		mcpCall{Name: "esdb_read_events", Arguments: map[string]any{"subject": "/books/1"}},
		mcpCall{Name: "esdb_run_eventql_query", Arguments: map[string]any{"query": "FROM e IN events PROJECT INTO e"}},
		mcpCall{Name: "eventstore_diagnostics"},
		mcpCall{Name: "esdb_verify_api_token"},
	)
	if o.Error != "" {
		t.Fatalf("the client: %s", o.Error)
	}
	if refused := mcpClient(t, inst, accessToken("querier"), mcpCall{Resource: "eventstore://event-types"}).Results[0]; !strings.Contains(refused.Thrown, "forbidden: insufficient permissions") {
		t.Fatalf("the event types resource for a token without read: %+v", refused)
	}
	var orders struct {
		Events []struct{ Subject string } `json:"events"`
	}
	o.Results[0].structured(t, &orders)
	if o.Results[0].IsError || len(orders.Events) != 1 || orders.Events[0].Subject != "/orders/1" {
		t.Fatalf("the reader reads /orders: %+v", o.Results[0])
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/api/v1/read-events", `{"subject":"/books/1"}`},
		{"POST", "/api/v1/run-eventql-query", queryBody("FROM e IN events PROJECT INTO e")},
		{"GET", "/api/v1/diagnostics", ""},
	}
	for i, route := range routes {
		res := o.Results[i+1]
		want := inst.Do(route.method, route.path, reader, route.body)
		if want.StatusCode != 403 || !res.IsError || res.text(t) != strings.TrimSpace(string(want.Body)) {
			t.Fatalf("%s for the reader: %+v; the route answers %d %s", route.path, res, want.StatusCode, want.Body)
		}
	}
	if o.Results[4].IsError {
		t.Fatalf("esdb_verify_api_token for the reader: %+v", o.Results[4])
	}
	audited := map[string]bool{}
	for _, line := range inst.Logs("request audited") {
		if line["token"] == "reader" && line["status"] == float64(403) {
			tool, _ := line["tool"].(string)
			audited[tool] = true
		}
	}
	for _, tool := range []string{"esdb_read_events", "esdb_run_eventql_query", "eventstore_diagnostics"} {
		if !audited[tool] {
			t.Fatalf("no audit line of the reader's refused %s: %v", tool, inst.Logs("request audited"))
		}
	}

	// A session started with one token refuses another.
	session := mcpInitialize(t, inst, reader)
	r := inst.Do("POST", "/mcp", admin, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		"Mcp-Session-Id", session, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if r.StatusCode != 403 {
		t.Fatalf("the reader's session used with the admin token: %d %s", r.StatusCode, r.Body)
	}
}

// mcpInitialize starts a session with token over plain HTTP and returns
// its id.
func mcpInitialize(t *testing.T, inst *harness.Instance, token string) string {
	t.Helper()
	r := inst.Do("POST", "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	session := r.Header.Get("Mcp-Session-Id")
	if r.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d %s", r.StatusCode, r.Body)
	}
	r = inst.Do("POST", "/mcp", token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"Mcp-Session-Id", session, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if r.StatusCode != 202 {
		t.Fatalf("notifications/initialized: %d %s", r.StatusCode, r.Body)
	}
	return session
}

// TestMCPEndpoint covers /mcp over HTTP: absent without --mcp-enabled,
// 401 without a valid token, 405 for other methods; a session ended by
// its client is gone; the write tools with --mcp-allow-writes; a stop ends
// the server's open streams.
func TestMCPEndpoint(t *testing.T) {
	off := harness.Start(t, bin, harness.Dev()...)
	checkError(t, off.Do("POST", "/mcp", harness.Token, `{}`), 404, "not found: unknown route")

	inst := harness.Start(t, bin, harness.Dev("--mcp-enabled", "--mcp-allow-writes")...)
	for _, token := range []string{"", "wrong-token"} {
		if r := inst.Do("POST", "/mcp", token, `{}`, "Content-Type", "application/json", "Accept", "application/json, text/event-stream"); r.StatusCode != 401 {
			t.Fatalf("/mcp with token %q: %d %s", token, r.StatusCode, r.Body)
		}
	}
	if o := mcpClient(t, inst, ""); !strings.Contains(o.Error, "unauthorized") {
		t.Fatalf("the client without a token: %+v", o)
	}
	r := inst.Do("PUT", "/mcp", harness.Token, `{}`)
	checkError(t, r, 405, "method not allowed: use POST, GET, DELETE")
	if r.Header.Get("Allow") != "POST, GET, DELETE" {
		t.Fatalf("Allow %q", r.Header.Get("Allow"))
	}

	// Refused by the schema, and by the precondition.
	refused := []string{
		`{"events":[{"source":"https://library.example.com","subject":"/books/3","type":"io.example.book-acquired","data":{"n":"x"}}]}`,
		`{"events":[{"source":"https://library.example.com","subject":"/books/1","type":"io.example.book-acquired","data":{"n":3}}],"preconditions":[{"type":"isSubjectPristine","payload":{"subject":"/books/1"}}]}`,
	}
	o := mcpClient(t, inst, harness.Token,
		mcpCall{Name: "esdb_register_event_schema", Arguments: map[string]any{"eventType": "io.example.book-acquired",
			"schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}}}},
		mcpCall{Name: "esdb_write_events", Arguments: json.RawMessage(candidates("/books/1", "io.example.book-acquired", "/books/2", "io.example.book-acquired"))},
		mcpCall{Name: "esdb_write_events", Arguments: json.RawMessage(refused[0])},
		mcpCall{Name: "esdb_write_events", Arguments: json.RawMessage(refused[1])},
	)
	if o.Error != "" || len(o.Tools) != len(readTools)+2 {
		t.Fatalf("with --mcp-allow-writes: %s, %d tools", o.Error, len(o.Tools))
	}
	var written struct {
		Events []json.RawMessage `json:"events"`
	}
	o.Results[1].structured(t, &written)
	if o.Results[0].IsError || o.Results[1].IsError {
		t.Fatalf("the write tools: %+v", o.Results[:2])
	}
	sameJSON(t, "esdb_write_events", written.Events, payloads(t, inst, "/api/v1/read-events", `{"subject":"/books","options":{"recursive":true}}`, "event"))
	for i, body := range refused {
		res, want := o.Results[2+i], inst.Do("POST", "/api/v1/write-events", harness.Token, body)
		if want.StatusCode == 200 || !res.IsError || res.text(t) != strings.TrimSpace(string(want.Body)) {
			t.Fatalf("a refused write: %+v; the route answers %d %s", res, want.StatusCode, want.Body)
		}
	}

	// The client ended its session: it is gone.
	r = inst.Do("POST", "/mcp", harness.Token, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		"Mcp-Session-Id", o.SessionID, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if r.StatusCode != 404 {
		t.Fatalf("a request of an ended session: %d %s", r.StatusCode, r.Body)
	}

	// A stop ends the server's stream of a session at once.
	session := mcpInitialize(t, inst, harness.Token)
	req, err := http.NewRequest("GET", inst.URL("http")+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := harness.NewClient().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /mcp: %v %v", err, resp)
	}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		close(ended)
	}()
	start := time.Now()
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(20 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM with an open MCP stream", code)
	}
	<-ended
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the stop took %s with an open MCP stream", took)
	}
}
