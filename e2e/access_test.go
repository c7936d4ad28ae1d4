package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// accessTokens are the tokens of the access file of these tests: each name
// is its token's suffix, and its grants.
var accessTokens = []struct{ name, grants string }{
	{"reader", `{read: ["/orders"]}`},
	{"writer", `{read: ["/orders"], write: ["/orders"]}`},
	{"querier", `{query: true}`},
	{"schemas", `{schemas: true}`},
	{"registrar", `{schemas: true, query: true}`},
	{"consumer", `{consume: ["billing"]}`},
	{"operator", `{operate: true}`},
	{"admin", `{admin: true}`},
}

// accessToken returns the token of the access file's token name.
func accessToken(name string) string { return "e2e-access-token-of-" + name + "-0123456789" }

// startWithAccessFile starts an instance with an access file of
// accessTokens, one more token with extra grants named extra (unless
// empty), and a token "expired" that expired in 2020.
func startWithAccessFile(t *testing.T, extra ...string) *harness.Instance {
	t.Helper()
	var b strings.Builder
	b.WriteString("tokens:\n")
	entry := func(name, grants, more string) {
		d := sha256.Sum256([]byte(accessToken(name)))
		fmt.Fprintf(&b, "  - name: %s\n    sha256: %s\n    grants: %s\n%s", name, hex.EncodeToString(d[:]), grants, more)
	}
	for _, tok := range accessTokens {
		entry(tok.name, tok.grants, "")
	}
	entry("expired", "{admin: true}", "    expires: 2020-01-01T00:00:00Z\n")
	for i := 0; i+1 < len(extra); i += 2 {
		entry(extra[i], extra[i+1], "")
	}
	file := harness.WriteFile(t, t.TempDir(), "access.yaml", b.String())
	return harness.Start(t, bin, "run", "--access-file="+file, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
}

// accessFileOf writes an access file of the tokens, each its name and
// grants, with accessToken's token, and returns its path.
func accessFileOf(t *testing.T, tokens ...[2]string) string {
	t.Helper()
	var yaml strings.Builder
	yaml.WriteString("tokens:\n")
	for _, tok := range tokens {
		d := sha256.Sum256([]byte(accessToken(tok[0])))
		fmt.Fprintf(&yaml, "  - name: %s\n    sha256: %s\n    grants: %s\n", tok[0], hex.EncodeToString(d[:]), tok[1])
	}
	return harness.WriteFile(t, t.TempDir(), "access.yaml", yaml.String())
}

// statusOf sends a request and returns its status once its headers
// arrive; a stream's body is not read.
func statusOf(t *testing.T, inst *harness.Instance, method, path, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, inst.URL("http")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := inst.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAccessMatrix sends every route with every token of the access file:
// a token with the route's grant gets the route's own answer, one without
// gets 403 forbidden: insufficient permissions, and nothing of a refused
// request is done.
func TestAccessMatrix(t *testing.T) {
	inst := startWithAccessFile(t)
	admin := accessToken("admin")
	all := func(string) bool { return true }
	only := func(names ...string) func(string) bool {
		return func(name string) bool { return name == "admin" || slices.Contains(names, name) }
	}
	delivery := `"AQAAAAFiaWxsaW5n"` // a token of billing's partition 0, epoch 0, event 0, attempt 1
	routes := []struct {
		method, path, body string
		allowed            func(token string) bool
	}{
		{"POST", "/api/v1/verify-api-token", ``, all},
		{"POST", "/api/v1/read-access", `{}`, all},
		{"GET", "/api/v1/health", ``, all},
		{"GET", "/api/v1/ping", ``, all},
		{"POST", "/api/v1/write-events", `{"events":[{"source":"https://e2e.example","subject":"/orders/1","type":"io.example.placed","data":{}}]}`, only("writer")},
		{"POST", "/api/v1/read-events", `{"subject":"/orders/1","options":{"recursive":false}}`, only("reader", "writer")},
		{"POST", "/api/v1/observe-events", `{"subject":"/orders","options":{"recursive":true}}`, only("reader", "writer")},
		{"POST", "/api/v1/read-subjects", `{"baseSubject":"/"}`, only("reader", "writer")},
		{"POST", "/api/v1/read-subject-children", `{"subject":"/orders"}`, only("reader", "writer")},
		{"POST", "/api/v1/search-subjects", `{"baseSubject":"/","contains":"1"}`, only("reader", "writer")},
		{"POST", "/api/v1/read-event-types", `{}`, only("reader", "writer")},
		{"POST", "/api/v1/read-event-type", `{"eventType":"io.example.placed"}`, only("reader", "writer")},
		{"POST", "/api/v1/register-event-schema", `{"eventType":"io.example.shipped","schema":{"type":"object"}}`, only("registrar")},
		{"POST", "/api/v1/run-eventql-query", `{"query":"FROM e IN events PROJECT INTO e"}`, only("querier", "registrar")},
		{"POST", "/api/v1/create-subscription", `{"subscription":"billing","subject":"/orders","options":{"recursive":true}}`, only("operator")},
		{"POST", "/api/v1/read-subscriptions", `{}`, only("operator")},
		{"POST", "/api/v1/read-subscription", `{"subscription":"billing"}`, only("operator", "consumer")},
		{"POST", "/api/v1/consume-subscription", `{"subscription":"billing","consumer":"w1"}`, only("consumer")},
		{"POST", "/api/v1/acknowledge-deliveries", `{"subscription":"billing","deliveries":[` + delivery + `]}`, only("consumer")},
		{"POST", "/api/v1/retry-deliveries", `{"subscription":"billing","deliveries":[` + delivery + `]}`, only("consumer")},
		{"POST", "/api/v1/park-deliveries", `{"subscription":"billing","deliveries":[` + delivery + `]}`, only("consumer")},
		{"POST", "/api/v1/extend-deliveries", `{"subscription":"billing","deliveries":[` + delivery + `]}`, only("consumer")},
		{"POST", "/api/v1/read-parked-events", `{"subscription":"billing"}`, only("operator")},
		{"POST", "/api/v1/replay-parked-events", `{"subscription":"billing"}`, only("operator")},
		{"POST", "/api/v1/reset-subscription", `{"subscription":"billing","start":"beginning"}`, only("operator")},
		{"POST", "/api/v1/backup", `{}`, only("operator")},
		{"POST", "/api/v1/create-download", `{"route":"/api/v1/backup"}`, only("operator")},
		{"POST", "/api/v1/create-download", `{"route":"/api/v1/run-eventql-query","body":{"query":"FROM e IN events PROJECT INTO e"}}`, only("querier", "registrar")},
		{"POST", "/api/v1/read-download", `{"ticket":"none"}`, all},
		{"POST", "/api/v1/cancel-download", `{"ticket":"none"}`, all},
		{"POST", "/api/v1/verify-store", `{}`, only("operator")},
		{"GET", "/api/v1/diagnostics", ``, only("operator")},
		{"POST", "/api/v1/restore", `not a backup`, only("operator")},
		{"POST", "/api/v1/delete-subscription", `{"subscription":"billing"}`, only("operator")},
		{"POST", "/api/v1/put-into-read-only-mode", `{}`, only("operator")},
	}
	for _, route := range routes {
		for _, tok := range append(accessTokens, struct{ name, grants string }{"expired", ""}) {
			// A refused request changes nothing: the allowed token that
			// comes last (admin) does what the route does.
			if tok.name == "admin" {
				continue
			}
			got := statusOf(t, inst, route.method, route.path, accessToken(tok.name), route.body)
			switch {
			case tok.name == "expired" && route.path != "/api/v1/ping":
				if got != 401 {
					t.Errorf("%s with an expired token: %d, want 401", route.path, got)
				}
			case route.allowed(tok.name) && (got == 401 || got == 403):
				t.Errorf("%s with %s, which may: %d", route.path, tok.name, got)
			case !route.allowed(tok.name) && got != 403:
				t.Errorf("%s with %s, which may not: %d, want 403", route.path, tok.name, got)
			}
		}
		if got := statusOf(t, inst, route.method, route.path, admin, route.body); got == 401 || got == 403 {
			t.Errorf("%s with admin: %d", route.path, got)
		}
	}
	// What the refused requests would have changed is as the allowed ones
	// left it: one write by writer and one by admin, one schema, no
	// subscription (created, then deleted), read-only at the end.
	r := inst.Do("POST", "/api/v1/read-events", admin, `{"subject":"/","options":{"recursive":true}}`)
	if n := strings.Count(string(r.Body), `"type":"event"`); r.StatusCode != 200 || n != 2 {
		t.Errorf("events after the matrix: %d (%d), want 2", n, r.StatusCode)
	}
	if r := inst.Do("POST", "/api/v1/read-subscriptions", admin, `{}`); r.StatusCode != 200 || len(r.Body) != 0 {
		t.Errorf("subscriptions after the matrix: %d %s", r.StatusCode, r.Body)
	}
	if r := inst.Do("POST", "/api/v1/write-events", admin, `{"events":[{"source":"https://e2e.example","subject":"/orders/2","type":"io.example.placed","data":{}}]}`); r.StatusCode != 503 {
		t.Errorf("a write after put-into-read-only-mode: %d", r.StatusCode)
	}
	r = inst.Do("POST", "/api/v1/write-events", accessToken("reader"), `{"events":[]}`)
	if r.StatusCode != 403 || string(r.Body) != "forbidden: insufficient permissions\n" {
		t.Errorf("403 answer: %d %q", r.StatusCode, r.Body)
	}
	denied := inst.Logs("request audited")
	if len(denied) == 0 {
		t.Fatal("no audit lines")
	}
	for _, line := range denied {
		if line["logger"] != "audit" || line["token"] == nil || line["route"] == nil || line["status"] == nil {
			t.Fatalf("audit line %v", line)
		}
		if strings.Contains(fmt.Sprint(line), "e2e-access-token") {
			t.Fatalf("an audit line holds a token: %v", line)
		}
	}
}

// TestAccessPrefixes checks the edges of prefixes: /orders holds
// /orders/1 but not /ordersx, / holds everything, a recursive read needs
// its base under a prefix, read-subjects lists only what the token may
// read, and preconditions read what they name.
func TestAccessPrefixes(t *testing.T) {
	inst := startWithAccessFile(t, "everything", `{read: ["/"], write: ["/"]}`, "acker", `{write: ["/invoices"], consume: ["billing"]}`)
	write := func(token, subject, extra string) int {
		return statusOf(t, inst, "POST", "/api/v1/write-events", accessToken(token),
			`{"events":[{"source":"https://e2e.example","subject":"`+subject+`","type":"io.example.placed","data":{}}]`+extra+`}`)
	}
	for _, c := range []struct {
		token, subject, extra string
		want                  int
	}{
		{"writer", "/orders", "", 200},
		{"writer", "/orders/1", "", 200},
		{"writer", "/orders/1/lines/2", "", 200},
		{"writer", "/ordersx", "", 403},
		{"writer", "/", "", 403},
		{"writer", "/other", "", 403},
		{"everything", "/ordersx", "", 200},
		{"everything", "/", "", 200},
		{"writer", "/orders/2", `,"preconditions":[{"type":"isSubjectPristine","payload":{"subject":"/orders/3"}}]`, 200},
		{"writer", "/orders/2", `,"preconditions":[{"type":"isSubjectPristine","payload":{"subject":"/ordersx"}}]`, 403},
		{"writer", "/orders/2", `,"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events PROJECT INTO COUNT() > 0"}}]`, 403},
		{"everything", "/orders/2", `,"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":"FROM e IN events PROJECT INTO COUNT() > 0"}}]`, 403},
		{"acker", "/invoices/1", `,"acknowledge":{"subscription":"other","deliveries":["AQAAAAFvdGhlcg"]}`, 403},
	} {
		if got := write(c.token, c.subject, c.extra); got != c.want {
			t.Errorf("write of %s by %s%s: %d, want %d", c.subject, c.token, c.extra, got, c.want)
		}
	}
	read := func(token, body string) int {
		return statusOf(t, inst, "POST", "/api/v1/read-events", accessToken(token), body)
	}
	for _, c := range []struct {
		token, body string
		want        int
	}{
		{"reader", `{"subject":"/orders","options":{"recursive":true}}`, 200},
		{"reader", `{"subject":"/orders/1","options":{"recursive":true}}`, 200},
		{"reader", `{"subject":"/","options":{"recursive":true}}`, 403},
		{"reader", `{"subject":"/ordersx","options":{"recursive":false}}`, 403},
		{"reader", `{"subject":"/orders","options":{"recursive":true,"fromLatestEvent":{"subject":"/other","type":"io.example.placed","ifEventIsMissing":"read-everything"}}}`, 403},
		{"everything", `{"subject":"/","options":{"recursive":true}}`, 200},
	} {
		if got := read(c.token, c.body); got != c.want {
			t.Errorf("read %s by %s: %d, want %d", c.body, c.token, got, c.want)
		}
	}
	r := inst.Do("POST", "/api/v1/read-subjects", accessToken("reader"), `{"baseSubject":"/"}`)
	var subjects []string
	for _, line := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
		var l struct {
			Payload struct{ Subject string } `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Payload.Subject != "" {
			subjects = append(subjects, l.Payload.Subject)
		}
	}
	if want := []string{"/orders", "/orders/1", "/orders/1/lines", "/orders/1/lines/2", "/orders/2"}; !slices.Equal(subjects, want) {
		t.Errorf("read-subjects by reader: %v, want %v", subjects, want)
	}
	var access struct {
		Token   string         `json:"token"`
		Grants  map[string]any `json:"grants"`
		Expires *string        `json:"expires"`
	}
	r = inst.Do("POST", "/api/v1/read-access", accessToken("writer"), `{}`)
	if err := json.Unmarshal(r.Body, &access); err != nil || r.StatusCode != 200 || access.Token != "writer" || access.Expires != nil ||
		fmt.Sprint(access.Grants) != "map[read:[/orders] write:[/orders]]" {
		t.Errorf("read-access: %d %s", r.StatusCode, r.Body)
	}
}

// TestAccessFileRefusedAtStart: an access file that holds anything it may
// not is a usage error, with the reason.
func TestAccessFileRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	for what, text := range map[string]string{
		"unknown grant": "tokens:\n  - name: a\n    sha256: " + strings.Repeat("ab", 32) + "\n    grants: {delete: true}\n",
		"no tokens":     "tokens: []\n",
	} {
		file := harness.WriteFile(t, dir, strings.ReplaceAll(what, " ", "-")+".yaml", text)
		code, _, stderr := harness.Run(t, bin, harness.StartTimeout, "run", "--access-file="+file, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
		if code != 2 || !strings.Contains(stderr, "--access-file") {
			t.Errorf("%s: exit %d, stderr %q", what, code, stderr)
		}
	}
	code, _, stderr := harness.Run(t, bin, harness.StartTimeout, "run", "--api-token="+harness.Token, "--access-file="+filepath.Join(dir, "x.yaml"), "--data-directory-temporary")
	if code != 2 || !strings.Contains(stderr, "cannot be combined") {
		t.Errorf("both a token and an access file: exit %d, stderr %q", code, stderr)
	}
}

// liveLines opens a stream of path with token and returns its lines as
// they arrive; the channel closes when the stream ends.
func liveLines(t *testing.T, inst *harness.Instance, path, token, body string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "POST", inst.URL("http")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// TestAccessReload changes the access file as a Kubernetes Secret volume
// does (a symlink swap) while writers and observers run: the new tokens
// are in force within seconds, the streams of a removed token end with
// token revoked, a malformed version is refused and the grants before
// stay, SIGHUP reloads at once, and no request of a kept token fails.
func TestAccessReload(t *testing.T) {
	dir := t.TempDir()
	entry := func(name, grants string) string {
		d := sha256.Sum256([]byte(accessToken(name)))
		return fmt.Sprintf("  - name: %s\n    sha256: %s\n    grants: %s\n", name, hex.EncodeToString(d[:]), grants)
	}
	base := "tokens:\n" + entry("writer", `{read: ["/orders"], write: ["/orders"]}`) + entry("admin", "{admin: true}")
	version := 0
	publish := func(text string) { // as the kubelet does: a new data directory, then one rename of the ..data link
		t.Helper()
		version++
		data := fmt.Sprintf("..data_%d", version)
		if err := os.Mkdir(filepath.Join(dir, data), 0o755); err != nil {
			t.Fatal(err)
		}
		harness.WriteFile(t, filepath.Join(dir, data), "access.yaml", text)
		if err := os.Symlink(data, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish(base + entry("temporary", `{read: ["/"]}`))
	if err := os.Symlink(filepath.Join("..data", "access.yaml"), filepath.Join(dir, "access.yaml")); err != nil {
		t.Fatal(err)
	}
	inst := harness.Start(t, bin, "run", "--access-file="+filepath.Join(dir, "access.yaml"), "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")

	// Writers and observers of kept tokens, all through the reloads.
	var failed atomic.Int64
	var failures sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := harness.NewClient()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"events":[{"source":"https://e2e.example","subject":"/orders/%d","type":"io.example.placed","data":{"i":%d}}]}`, w, i)
				req, _ := http.NewRequest("POST", inst.URL("http")+"/api/v1/write-events", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+accessToken("writer"))
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					failures.Store(err.Error(), true)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					failures.Store(resp.StatusCode, true)
				}
			}
		}()
	}
	var observers []<-chan string
	for range 32 {
		observers = append(observers, liveLines(t, inst, "/api/v1/observe-events", accessToken("writer"), `{"subject":"/orders","options":{"recursive":true}}`))
	}
	revoked := liveLines(t, inst, "/api/v1/observe-events", accessToken("temporary"), `{"subject":"/","options":{"recursive":true}}`)

	// The temporary token is removed: its stream ends with token revoked.
	publish(base)
	changed := time.Now()
	deadline := time.After(5 * time.Second)
	var last string
	for ended := false; !ended; {
		select {
		case line, ok := <-revoked:
			if !ok {
				ended = true
				break
			}
			last = line
		case <-deadline:
			t.Fatal("the removed token's stream did not end within 5 s of the change")
		}
	}
	t.Logf("the removed token's stream ended %v after the file changed (looked at every second)", time.Since(changed).Round(time.Millisecond))
	if !strings.Contains(last, `"type":"error"`) || !strings.Contains(last, "token revoked") {
		t.Fatalf("the revoked stream's last line: %s", last)
	}
	if got := statusOf(t, inst, "POST", "/api/v1/verify-api-token", accessToken("temporary"), ""); got != 401 {
		t.Fatalf("the removed token: %d, want 401", got)
	}
	inst.WaitForLog("access file reloaded", 5*time.Second)

	// A malformed version is refused; the grants before stay.
	publish(base + "  - name: broken\n    grants: {delete: true}\n")
	inst.WaitForLog("access file rejected", 5*time.Second)
	if got := statusOf(t, inst, "POST", "/api/v1/verify-api-token", accessToken("admin"), ""); got != 200 {
		t.Fatalf("admin after a rejected version: %d", got)
	}

	// SIGHUP reads the file at once.
	publish(base + entry("added", `{query: true}`))
	inst.Signal(syscall.SIGHUP)
	inst.WaitForLog("reloading", 5*time.Second)
	for deadline := time.Now().Add(5 * time.Second); statusOf(t, inst, "POST", "/api/v1/read-access", accessToken("added"), "") != 200; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the added token is not in force 5 s after SIGHUP")
		}
	}
	close(stop)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		var kinds []string
		failures.Range(func(k, _ any) bool { kinds = append(kinds, fmt.Sprint(k)); return true })
		t.Fatalf("%d writes of a kept token failed during the reloads: %v", n, kinds)
	}
	for i, o := range observers {
		select {
		case line, ok := <-o:
			for ok && !strings.Contains(line, `"type":"error"`) {
				select {
				case line, ok = <-o:
				default:
					ok = false
					line = ""
				}
			}
			if strings.Contains(line, `"type":"error"`) {
				t.Fatalf("observer %d of a kept token ended: %s", i, line)
			}
		default:
		}
	}
	if rejected := inst.Logs("access file rejected"); len(rejected) != 1 || rejected[0]["level"] != "ERROR" || rejected[0]["error"] == nil {
		t.Fatalf("rejection lines: %v", rejected)
	}
}
