package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// opsEvents is the size of the store TestUIOperations backs up.
const opsEvents = 3000

// buildOpsStore registers a schema and writes opsEvents events on 50
// subjects, with characters JSON escapes, non-ASCII text, integers beyond
// 2^53 and trace fields, in batches of 500.
func buildOpsStore(t *testing.T, inst *harness.Instance) {
	t.Helper()
	if r := inst.Do("POST", "/api/v1/register-event-schema", harness.Token,
		`{"eventType":"com.example.ops.noted","schema":{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}}`); r.StatusCode != 200 {
		t.Fatalf("register a schema: %d %s", r.StatusCode, r.Body)
	}
	for first := 0; first < opsEvents; first += 500 {
		var body strings.Builder
		body.WriteString(`{"events":[`)
		for i := first; i < first+500; i++ {
			if i > first {
				body.WriteByte(',')
			}
			trace := ""
			if i%7 == 0 {
				trace = `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"ops=1"`
			}
			fmt.Fprintf(&body, `{"source":"https://ops.example.com","subject":"/ops/%d","type":"com.example.ops.noted","data":{"i":%d,"text":"<&> é \u2028 %d","big":123456789012345678901234567890,"x":1.50}%s}`, i%50, i, i, trace)
		}
		body.WriteString(`]}`)
		mustWrite(t, inst, body.String())
	}
}

// bodies records the response bodies of the tab's requests to a path.
type bodies struct {
	mu    sync.Mutex
	ids   []network.RequestID
	ready map[network.RequestID]bool
}

func (b *browser) captureBodies(path string) *bodies {
	c := &bodies{ready: map[network.RequestID]bool{}}
	chromedp.ListenTarget(b.ctx, func(ev any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventResponseReceived:
			if strings.HasSuffix(ev.Response.URL, path) {
				c.ids = append(c.ids, ev.RequestID)
			}
		case *network.EventLoadingFinished:
			c.ready[ev.RequestID] = true
		}
	})
	return c
}

// last returns the body of the last complete response.
func (c *bodies) last(t *testing.T, b *browser) []byte {
	t.Helper()
	var id network.RequestID
	waitUntil(t, 10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.ids) == 0 || !c.ready[c.ids[len(c.ids)-1]] {
			return false
		}
		id = c.ids[len(c.ids)-1]
		return true
	})
	var body []byte
	b.run("response body", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		body, err = network.GetResponseBody(id).Do(ctx)
		return err
	}))
	return body
}

// tamper answers the tab's next request to path with change applied to the
// server's response (its headers and body; the status becomes 200); the
// channel tells when it did.
func (b *browser) tamper(path string, change func(header map[string]string, body []byte) []byte) <-chan error {
	b.t.Helper()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(b.ctx)
	b.t.Cleanup(cancel)
	chromedp.ListenTarget(ctx, func(ev any) {
		paused, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		cancel() // one request only
		go func() {
			exec := cdp.WithExecutor(b.ctx, chromedp.FromContext(b.ctx).Target)
			raw, err := fetch.GetResponseBody(paused.RequestID).Do(exec)
			if err != nil {
				done <- fmt.Errorf("%s: %w", path, err)
				return
			}
			header := map[string]string{}
			for _, h := range paused.ResponseHeaders {
				if k := strings.ToLower(h.Name); k != "content-length" && k != "transfer-encoding" {
					header[h.Name] = h.Value
				}
			}
			body := change(header, raw)
			var entries []*fetch.HeaderEntry
			for k, v := range header {
				entries = append(entries, &fetch.HeaderEntry{Name: k, Value: v})
			}
			done <- fetch.FulfillRequest(paused.RequestID, 200).WithResponseHeaders(entries).
				WithBody(base64.StdEncoding.EncodeToString(body)).Do(exec)
		}()
	})
	b.run("intercept "+path, fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*" + path, RequestStage: fetch.RequestStageResponse}}))
	return done
}

// untamper waits for the tampered response and stops intercepting.
func (b *browser) untamper(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tampering with a response: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request was not intercepted")
	}
	b.run("stop intercepting", fetch.Disable())
}

// TestUIOperations drives the Operations view and the dashboard's charts:
// the charts show the writes; a backup of a store of a few thousand events
// downloaded through the console is the API's backup byte for byte (with
// and without schemas), its progress reaches the announced count, and the
// page says what the server checked (cancelled and failed downloads:
// TestUILargeDownloads); verify-store
// with the API's outcome; the diagnostics without the token and copied as the
// server wrote them; read-only mode through its dialog.
func TestUIOperations(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	b := newBrowser(t, 1280, 900)
	downloads := b.allowDownloads()
	diagnostics := b.captureBodies("/api/v1/diagnostics")
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	// Written and read while the console samples the metrics.
	buildOpsStore(t, inst)
	if lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`); len(lines) != opsEvents {
		t.Fatalf("read-events: %d lines", len(lines))
	}
	opsCharts(t, b)

	b.eval(`location.hash = "#/operations"`, nil)
	b.waitFocus("#h-operations")
	opsBackup(t, b, inst, downloads, "{}", true)
	opsBackup(t, b, inst, downloads, `{"schemas":false}`, false)
	opsVerify(t, b, inst)
	opsDiagnostics(t, b, inst, diagnostics)
	opsReadOnly(t, b, inst)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// chartJS reads a chart's data attributes, its summary, and whether a point
// of its line lies above the baseline.
const chartJS = `((id) => {
  const f = document.getElementById(id);
  const ys = [...f.querySelectorAll("polyline")].flatMap((p) => p.getAttribute("points").split(" ").map((xy) => Number(xy.split(",")[1])));
  return { Max: Number(f.dataset.max || 0), Now: f.dataset.now, Points: Number(f.dataset.points), Summary: f.querySelector(".chart-summary").textContent, AboveBase: ys.some((y) => y < 99) };
})`

type chartState struct {
	Max       float64
	Now       string
	Points    int
	Summary   string
	AboveBase bool
}

func readChart(b *browser, id string) chartState {
	b.t.Helper()
	var c chartState
	b.eval(chartJS+`(`+strconv.Quote(id)+`)`, &c)
	return c
}

func opsCharts(t *testing.T, b *browser) {
	b.waitFor("a write rate above zero", `Number(document.querySelector("#chart-write-rate").dataset.max) > 0`, 20*time.Second)
	b.waitFor("a write latency", `Number(document.querySelector("#chart-write-p99").dataset.max) > 0`, 20*time.Second)
	b.waitFor("a few samples since", `Number(document.querySelector("#chart-write-rate").dataset.points) >= 3`, 20*time.Second)
	rate := readChart(b, "chart-write-rate")
	m := regexp.MustCompile(`maximum ([0-9.,]+) events/s`).FindStringSubmatch(rate.Summary)
	if m == nil || !rate.AboveBase {
		t.Fatalf("write-rate chart after %d writes: %+v", opsEvents, rate)
	}
	if shown, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64); shown <= 0 || shown > float64(opsEvents) {
		t.Errorf("write-rate chart says %q (max %v): not the rate of %d events", rate.Summary, rate.Max, opsEvents)
	}
	p99 := readChart(b, "chart-write-p99")
	if p99.Max <= 0 || p99.Max > 10 || !p99.AboveBase || !strings.Contains(p99.Summary, " ms") {
		t.Errorf("write latency p99 chart: %+v", p99)
	}
	observers := readChart(b, "chart-observers")
	if observers.Now != "0" || observers.Points == 0 || !strings.Contains(observers.Summary, "maximum 0") {
		t.Errorf("observers chart: %+v", observers)
	}
	b.waitFor("events read above zero", `Number(document.querySelector("#chart-read-rate").dataset.max) > 0`, 20*time.Second)
	if read := readChart(b, "chart-read-rate"); !read.AboveBase || !strings.Contains(read.Summary, "events/s") {
		t.Errorf("events read chart: %+v", read)
	}
	t.Logf("charts: write rate %q; p99 %q", rate.Summary, p99.Summary)
	b.screenshot("dashboard-charts")
}

var backupName = regexp.MustCompile(`^eventstore-backup-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.ndjson$`)

// opsBackup downloads a backup through the console and compares it with
// the API's answer to the same request.
func opsBackup(t *testing.T, b *browser, inst *harness.Instance, downloads *downloads, request string, schemas bool) {
	want := inst.Do("POST", "/api/v1/backup", harness.Token, request)
	if want.StatusCode != 200 {
		t.Fatalf("backup %s: %d %s", request, want.StatusCode, want.Body)
	}
	n := want.Header.Get("Eventstore-Backup-Events")
	if n != strconv.Itoa(opsEvents) {
		t.Fatalf("the API's backup announces %s events", n)
	}
	var checked bool
	b.eval(`document.querySelector("#backup-schemas").checked`, &checked)
	if checked != schemas {
		b.run("schemas checkbox", chromedp.Click("#backup-schemas", chromedp.ByQuery))
	}
	b.run("download a backup", chromedp.Click("#backup-start", chromedp.ByQuery))
	b.waitFor("backup done", `document.querySelector("#backup").dataset.state !== "running"`, 30*time.Second)
	if state := b.attr("#backup", "data-state"); state != "done" {
		t.Fatalf("backup %s: state %s: %s", request, state, b.text("#backup-error"))
	}
	var progress struct{ Value, Max float64 }
	b.eval(`({ Value: document.querySelector("#backup-progress").value, Max: document.querySelector("#backup-progress").max })`, &progress)
	if events, expected := b.attr("#backup-count", "data-events"), b.attr("#backup-count", "data-expected"); events != n || expected != n || progress.Value != progress.Max || progress.Max != float64(opsEvents) {
		t.Errorf("backup progress: %s of %s events, bar %v of %v", events, expected, progress.Value, progress.Max)
	}
	if msg := b.text("#backup-summary"); !strings.Contains(msg, "all "+formatCount(opsEvents)+" announced events") || !strings.Contains(msg, "the last event's hash is the head hash "+want.Header.Get("Eventstore-Backup-Head-Hash")[:12]) {
		t.Errorf("backup summary %q", msg)
	}
	if schemas {
		b.screenshot("operations-backup")
	}
	name, path := downloads.nextPath(t, 60*time.Second)
	if !backupName.MatchString(name) {
		t.Errorf("backup file name %q", name)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Body) {
		t.Fatalf("backup %s downloaded through the console differs from the API's: %d bytes (sha256 %x), API %d bytes (sha256 %x); first difference at %d",
			request, len(got), sha256.Sum256(got), len(want.Body), sha256.Sum256(want.Body), firstDifference(got, want.Body))
	}
	if hasSchema := bytes.Contains(got, []byte(`{"type":"schema"`)); hasSchema != schemas {
		t.Errorf("backup %s: schema lines %v", request, hasSchema)
	}
	t.Logf("backup %s through the console: %d bytes, sha256 %x, identical to the API's", request, len(got), sha256.Sum256(got))
}

// opsVerify runs verify-store through the console and expects the outcome
// and head hash the API gives.
func opsVerify(t *testing.T, b *browser, inst *harness.Instance) {
	api := inst.Do("POST", "/api/v1/verify-store", harness.Token, "{}")
	if api.StatusCode != 200 {
		t.Fatalf("verify-store: %d %s", api.StatusCode, api.Body)
	}
	b.run("verify the store", chromedp.Click("#verify-start", chromedp.ByQuery))
	b.waitFor("verification over", `!["idle", "running"].includes(document.querySelector("#verify").dataset.state)`, 60*time.Second)
	state, outcome := b.attr("#verify", "data-state"), b.text("#verify-outcome")
	head := inst.Do("POST", "/api/v1/backup", harness.Token, `{"schemas":false}`).Header.Get("Eventstore-Backup-Head-Hash")
	if state != "verified" || !strings.Contains(outcome, fmt.Sprintf("Verified: %s events", formatCount(opsEvents))) || !strings.Contains(outcome, head) {
		t.Errorf("verify-store: the console shows %s: %q (head %s)", state, outcome, head)
	}
	t.Logf("verify-store (API %d): %s", api.StatusCode, outcome)
	b.screenshot("operations-verify")

	// Both outcomes of verify-store (docs/api.md §4.13), as a server would stream them.
	hash := strings.Repeat("ab", 32)
	for _, c := range []struct{ body, state, shown string }{
		{`{"type":"verification","payload":{"verified":true,"events":3000,"headHash":"` + hash + `"}}`, "verified", "Verified: 3,000 events, every hash, link and index checked in"},
		{`{"type":"verification","payload":{"verified":false,"events":1234,"problem":"event 1234: hash mismatch"}}`, "failed", "Verification failed after checking 1,234 events: event 1234: hash mismatch"},
		{``, "error", "the stream ended without a verification line"},
	} {
		done := b.tamper("/api/v1/verify-store", func(header map[string]string, _ []byte) []byte {
			for k := range header {
				delete(header, k)
			}
			header["Content-Type"] = "application/x-ndjson"
			return []byte(`{"type":"heartbeat","payload":{}}` + "\n" + c.body + "\n")
		})
		b.run("verify", chromedp.Click("#verify-start", chromedp.ByQuery))
		b.untamper(t, done)
		b.waitFor("outcome "+c.state, `document.querySelector("#verify").dataset.state === `+strconv.Quote(c.state), 10*time.Second)
		if got := b.text("#verify-outcome"); !strings.Contains(got, c.shown) || (c.state == "verified" && !strings.Contains(got, hash)) {
			t.Errorf("verify-store outcome %s shown as %q", c.state, got)
		}
		if c.state == "failed" {
			b.screenshot("operations-verify-failed")
		}
	}
}

// formatCount writes n with thousands separators, as the console does.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// allowClipboard lets the page of inst write and read the clipboard.
func (b *browser) allowClipboard(inst *harness.Instance) {
	b.t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		b.run("clipboard permission", cdpbrowser.SetPermission(&cdpbrowser.PermissionDescriptor{Name: name}, cdpbrowser.PermissionSettingGranted).WithOrigin(inst.URL("http")))
	}
}

// opsDiagnostics checks the report's sections, the redacted token, and
// that "Copy as JSON" copies the server's text.
func opsDiagnostics(t *testing.T, b *browser, inst *harness.Instance, diagnostics *bodies) {
	b.waitFor("diagnostics", `document.querySelector("#diagnostics-report dl")`, 10*time.Second)
	var sections []string
	b.eval(`[...document.querySelectorAll("#diagnostics-report h4")].map((h) => h.textContent)`, &sections)
	if strings.Join(sections, ",") != "Version,System,Process,Options,Storage" {
		t.Errorf("diagnostics sections %v", sections)
	}
	// The token's option is redacted; started with an access file instead
	// (harness.AccessFileMode), it is empty.
	redacted, copiedOption := "<redacted>", `"api-token":"\u003credacted\u003e"`
	if harness.AccessFileMode() {
		redacted, copiedOption = `""`, `"api-token":""`
	}
	var token, backend string
	b.eval(`(() => { const dt = [...document.querySelectorAll("#diagnostics-report dt")].find((d) => d.textContent === "api-token"); return dt ? dt.nextElementSibling.textContent : ""; })()`, &token)
	b.eval(`(() => { const dt = [...document.querySelectorAll("#diagnostics-report dt")].find((d) => d.textContent === "engine.backend"); return dt ? dt.nextElementSibling.textContent : ""; })()`, &backend)
	if token != redacted || backend != "pebble" {
		t.Errorf("diagnostics: api-token %q, engine.backend %q", token, backend)
	}
	var page string
	b.eval(`document.documentElement.outerHTML + document.body.innerText`, &page)
	if strings.Contains(page, harness.Token) {
		t.Errorf("the page shows the API token")
	}
	b.allowClipboard(inst)
	b.run("copy", chromedp.Click("#diagnostics-copy", chromedp.ByQuery), chromedp.WaitVisible("#diagnostics-status", chromedp.ByQuery))
	var copied string
	b.run("read the clipboard", chromedp.Evaluate(`navigator.clipboard.readText()`, &copied, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	served := diagnostics.last(t, b)
	if copied != string(served) || !strings.Contains(copied, copiedOption) {
		t.Errorf("copied %d bytes %.200q…, the server sent %d bytes %.200q…", len(copied), copied, len(served), served)
	}
	b.screenshot("operations-diagnostics")
}

// opsReadOnly enters read-only mode through the dialog: Cancel changes
// nothing; confirming makes writes answer 503 and the dashboard show it.
func opsReadOnly(t *testing.T, b *browser, inst *harness.Instance) {
	if got := b.attr("#mode-value", "data-value"); got != "read-write" {
		t.Fatalf("mode before: %q", got)
	}
	b.run("open the dialog", chromedp.Click("#readonly-open", chromedp.ByQuery), chromedp.WaitVisible("#readonly-dialog", chromedp.ByQuery))
	if text := b.text("#readonly-dialog"); !strings.Contains(text, "only a restart of the service without --read-only leaves read-only mode") ||
		!strings.Contains(text, "503 service unavailable: read-only mode") {
		t.Errorf("dialog text %q", text)
	}
	b.waitFocus("#readonly-cancel")
	b.screenshot("operations-readonly-dialog")
	b.run("cancel", chromedp.Click("#readonly-cancel", chromedp.ByQuery), chromedp.WaitNotVisible("#readonly-dialog", chromedp.ByQuery))
	time.Sleep(300 * time.Millisecond)
	mustWrite(t, inst, candidates("/ops/after-cancel", "com.example.ops.other"))
	b.run("confirm", chromedp.Click("#readonly-open", chromedp.ByQuery), chromedp.WaitVisible("#readonly-dialog", chromedp.ByQuery),
		chromedp.Click("#readonly-confirm", chromedp.ByQuery))
	b.waitFor("read-only", `document.querySelector("#mode-value").dataset.value === "read-only"`, 10*time.Second)
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, candidates("/ops/x", "com.example.ops.other")), 503, "service unavailable: read-only mode")
	var disabled bool
	b.eval(`document.querySelector("#readonly-open").disabled`, &disabled)
	if !disabled {
		t.Errorf("the button stays enabled in read-only mode")
	}
	b.screenshot("operations-readonly")
	b.eval(`location.hash = "#/dashboard"`, nil)
	b.waitFor("dashboard shows read-only", `document.querySelector('[data-stat="mode"]').dataset.value === "read-only"`, 10*time.Second)
	b.screenshot("dashboard-readonly")
}

// narrowOperations checks the Operations view on a phone: a backup with
// its summary, the read-only dialog within the screen (closed by Escape), and
// the diagnostics' keys above their values.
func narrowOperations(t *testing.T, b *browser) {
	t.Helper()
	b.run("backup", chromedp.Click("#backup-start", chromedp.ByQuery))
	b.waitFor("backup done", `document.querySelector("#backup").dataset.state === "done"`, 20*time.Second)
	b.waitFor("diagnostics", `document.querySelector("#diagnostics-report dl")`, 10*time.Second)
	var columns string
	b.eval(`getComputedStyle(document.querySelector("#diagnostics-report dl")).gridTemplateColumns`, &columns)
	if strings.Contains(strings.TrimSpace(columns), " ") {
		t.Errorf("operations: the diagnostics have columns %q on a phone", columns)
	}
	b.run("open the dialog", chromedp.Click("#readonly-open", chromedp.ByQuery), chromedp.WaitVisible("#readonly-dialog", chromedp.ByQuery))
	var fits bool
	b.eval(`(() => { const r = document.querySelector("#readonly-dialog").getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth && r.bottom <= innerHeight; })()`, &fits)
	if !fits {
		t.Errorf("operations: the dialog does not fit the phone's screen")
	}
	b.screenshot("narrow-operations-dialog")
	b.key(kb.Escape)
	b.run("dialog closed", chromedp.WaitNotVisible("#readonly-dialog", chromedp.ByQuery))
	b.waitFocus("#readonly-open")
	if got := b.attr("#mode-value", "data-value"); got != "read-write" {
		t.Errorf("operations: mode %q after Escape", got)
	}
}

// TestUIOperationsKeyboard uses the Operations view by keyboard only: every
// control is a tab stop; the focus follows a backup and comes back, the dialog
// opens on Cancel, Escape closes it, and confirming leaves the focus on the
// section; verify-store and the copy work by Enter.
func TestUIOperationsKeyboard(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	mustWrite(t, inst, candidates("/books/42", lib+"book-acquired", "/books/7", lib+"book-acquired"))
	b := newBrowser(t, 1280, 900)
	b.allowDownloads()
	b.signInByKeyboard(inst)
	b.goByKeyboard("operations")
	b.waitFor("diagnostics", `document.querySelector("#diagnostics-report dl")`, 10*time.Second)
	stops := b.tabs(10)
	if want := []string{"#backup-schemas", "#backup-start", "#readonly-open", "#verify-start", "#erase-subject", "#erase-reason", "#erase-recursive", "#erase-open",
		"#diagnostics-refresh", "#diagnostics-copy"}; strings.Join(stops, " ") != strings.Join(want, " ") {
		t.Errorf("tab stops %v, want %v", stops, want)
	}

	// A backup: the focus moves to Cancel, then back to the start.
	b.tabTo("#backup-start", true)
	b.key(kb.Enter)
	b.waitFor("backup done", `document.querySelector("#backup").dataset.state === "done"`, 20*time.Second)
	b.waitFocus("#backup-start")

	// Read-only mode: Escape keeps the mode; Tab, Enter confirms.
	b.tabTo("#readonly-open", false)
	b.key(kb.Enter)
	b.waitFocus("#readonly-cancel")
	b.key(kb.Escape)
	b.waitFocus("#readonly-open")
	mustWrite(t, inst, candidates("/books/9", lib+"book-acquired"))
	b.key(kb.Enter)
	b.waitFocus("#readonly-cancel")
	if got := b.tab(false); got != "#readonly-confirm" {
		t.Fatalf("Tab in the dialog went to %s", got)
	}
	b.screenshot("keyboard-operations-dialog")
	b.key(kb.Enter)
	b.waitFor("read-only", `document.querySelector("#mode-value").dataset.value === "read-only"`, 10*time.Second)
	b.waitFocus("#h-mode")
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, candidates("/books/9", lib+"book-borrowed")), 503, "service unavailable: read-only mode")

	// Verify-store: the focus comes back to its button with the outcome.
	b.tabTo("#verify-start", false)
	b.key(kb.Enter)
	b.waitFor("verification over", `!["idle", "running"].includes(document.querySelector("#verify").dataset.state)`, 60*time.Second)
	b.waitFocus("#verify-start")

	// Copy as JSON.
	b.allowClipboard(inst)
	b.tabTo("#diagnostics-copy", false)
	b.key(kb.Enter)
	b.run("copied", chromedp.WaitVisible("#diagnostics-status", chromedp.ByQuery))
	b.screenshot("keyboard-operations")
	b.goByKeyboard("dashboard")
	b.waitFor("dashboard shows read-only", `document.querySelector('[data-stat="mode"]').dataset.value === "read-only"`, 10*time.Second)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
