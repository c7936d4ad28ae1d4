package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// browser is a headless Chromium tab that records console errors,
// uncaught exceptions and Content-Security-Policy violations.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string
}

// newBrowser starts Chromium (the Debian package) with a window of the
// given size. Screenshots go to the test's temp dir, or to the directory
// UI_SCREENSHOTS_DIR names, to keep them.
func newBrowser(t *testing.T, width, height int, options ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is required for the UI tests (scripts/test installs it): %v", err)
	}
	// Chromium leaves a directory of its own in TMPDIR (its singleton
	// socket): one the test removes after the browser has exited.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(width, height),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Env("TMPDIR="+t.TempDir()))
	opts = append(opts, options...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, shots: t.TempDir()}
	if dir := os.Getenv("UI_SCREENSHOTS_DIR"); dir != "" {
		b.shots = filepath.Join(dir, t.Name())
		if err := os.MkdirAll(b.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var parts []string
				for _, arg := range ev.Args {
					parts = append(parts, string(arg.Value)+arg.Description)
				}
				b.errors = append(b.errors, "console.error: "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, "exception: "+ev.ExceptionDetails.Text+" "+exceptionDescription(ev))
		case *log.EventEntryAdded:
			// A blocked inline style or script is no console call or
			// exception: Chromium reports it in the log, source security.
			if ev.Entry.Source == log.SourceSecurity {
				b.errors = append(b.errors, "security: "+ev.Entry.Text)
			}
		}
	})
	if err := chromedp.Run(ctx, log.Enable()); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return b
}

func exceptionDescription(ev *runtime.EventExceptionThrown) string {
	if ev.ExceptionDetails.Exception != nil {
		return ev.ExceptionDetails.Exception.Description
	}
	return ""
}

// run runs actions with a time limit.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v (console: %v)", what, err, b.consoleErrors())
	}
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// text returns the text content of the first element matching sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run("text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// attr returns an attribute of the first element matching sel, once
// there is one, as the page has it now ("" when it has none). It asks the
// page, never chromedp's copy of the DOM (chromedp.AttributeValue): that
// copy takes the page's DOM events in a goroutine of its own, behind the
// answers to commands, so right after a click it may still hold the value
// from before (seen under load: a toggle's aria-pressed read as "false"
// after the click that pressed it).
func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	var s string
	b.run("attribute "+name+" of "+sel, chromedp.WaitReady(sel, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(`+strconv.Quote(sel)+`)?.getAttribute(`+strconv.Quote(name)+`) ?? ""`, &s))
	return s
}

// screenshot saves the page as <name>.png and checks it is not blank.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	var shot []byte
	b.run("screenshot "+name, chromedp.CaptureScreenshot(&shot))
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if colors := distinctColors(img, 8); colors < 8 {
		b.t.Fatalf("screenshot %s looks blank: %d colors", path, colors)
	}
	b.t.Logf("screenshot %s", path)
}

// distinctColors counts the colors of img, up to limit.
func distinctColors(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 3 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// signIn opens the UI and signs in with token.
func (b *browser) signIn(inst *harness.Instance, token string) {
	b.t.Helper()
	b.run("sign in",
		chromedp.Navigate(inst.URL("http")+"/"),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SetValue("#token", token, chromedp.ByQuery),
		chromedp.Click("#login-submit", chromedp.ByQuery),
	)
}

// healthValue returns the observed value of a check of the health report.
func healthValue(t *testing.T, inst *harness.Instance, check string) float64 {
	t.Helper()
	var report struct {
		Checks map[string][]struct {
			ObservedValue any `json:"observedValue"`
		} `json:"checks"`
	}
	r := inst.Do("GET", "/api/v1/health", harness.Token, "")
	if err := json.Unmarshal(r.Body, &report); err != nil {
		t.Fatal(err)
	}
	v, _ := report.Checks[check][0].ObservedValue.(float64)
	return v
}

func TestUIConsole(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	// Event 1's data has a "hash" key and characters JSON escapes: the
	// browser must hash the stored bytes, not a re-serialization.
	mustWrite(t, inst, `{"events":[
		{"source":"https://library.example.com","subject":"/books/42","type":"`+lib+`book-acquired","data":{"n":0}},
		{"source":"https://library.example.com","subject":"/books/42","type":"`+lib+`book-borrowed","data":{"title":"Éclair <&> \u2028","hash":"not the hash","z":1.50}}]}`)
	mustWrite(t, inst, candidates("/books/7", lib+"book-acquired", "/readers/jane", lib+"reader-registered"))
	b := newBrowser(t, 1280, 900)

	// A wrong token is refused with a clear message.
	b.signIn(inst, "not-the-token")
	b.run("wrong token", chromedp.WaitVisible("#login-error", chromedp.ByQuery))
	if msg := b.text("#login-error"); !strings.Contains(strings.ToLower(msg), "not accepted") {
		t.Fatalf("wrong token message %q", msg)
	}

	// Dashboard: the numbers are those of the API.
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	if got, want := b.attr(`[data-stat="events"]`, "data-value"), fmt.Sprint(healthValue(t, inst, "storage:events")); got != want {
		t.Errorf("events stored: UI %q, API %s", got, want)
	}
	if got := b.attr(`[data-stat="head"]`, "data-value"); got != "3" {
		t.Errorf("head id: UI %q, want 3", got)
	}
	if got := b.attr(`[data-stat="observers"]`, "data-value"); got != "0" {
		t.Errorf("observers: UI %q", got)
	}
	if got := b.attr(`[data-stat="status"]`, "data-value"); got != "pass" {
		t.Errorf("status: UI %q", got)
	}
	b.screenshot("dashboard")

	// Subjects → events of a subject → an event, its hash verified in the browser.
	// The tree shows the first level; /books opens to show its children.
	b.run("subjects",
		chromedp.Navigate(inst.URL("http")+"/#/subjects"),
		chromedp.WaitVisible(`#subject-tree [role="treeitem"][data-subject="/books"][aria-expanded="false"]`, chromedp.ByQuery),
		chromedp.Click(`#subject-tree [data-subject="/books"] .twisty`, chromedp.ByQuery),
		chromedp.WaitVisible(`#subject-tree a[data-subject="/books/42"]`, chromedp.ByQuery),
	)
	b.screenshot("subjects")
	b.run("browse to the events of /books/42",
		chromedp.Click(`#subject-tree a[data-subject="/books/42"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#events-table tbody tr[data-id="1"]`, chromedp.ByQuery),
		chromedp.Click(`#events-table tbody tr[data-id="1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#event-verified[data-state="verified"]`, chromedp.ByQuery),
	)
	if raw := b.text("#event-raw"); !strings.Contains(raw, `"id":"1"`) || !strings.Contains(raw, "book-borrowed") {
		t.Errorf("raw event %q", raw)
	}
	// The detail: focus in it, the row in view beside it, pretty JSON
	// wrapped and with the stored tokens; Escape returns to the row.
	b.waitFocus("#event-detail")
	var layout struct {
		RowVisible, Wrapped bool
	}
	b.eval(`(() => {
		const r = document.querySelector('#events-table tr[data-id="1"]').getBoundingClientRect();
		const p = document.querySelector("#event-detail").getBoundingClientRect();
		const pre = document.querySelector("#event-pretty");
		return { RowVisible: r.top >= 0 && r.bottom <= innerHeight && r.right <= p.left, Wrapped: pre.scrollWidth <= pre.clientWidth };
	})()`, &layout)
	if !layout.RowVisible || !layout.Wrapped {
		t.Errorf("detail layout: %+v", layout)
	}
	if pretty := b.text("#event-pretty"); !strings.Contains(pretty, `"title": "Éclair \u003c\u0026\u003e \u2028"`) || !strings.Contains(pretty, `"z": 1.5`) {
		t.Errorf("pretty JSON %q", pretty)
	}
	b.screenshot("events")
	b.key(kb.Escape)
	b.waitFocus("event:1")

	// Jumps: to a time given in another zone, to a time after the last event.
	var second struct {
		Time string `json:"time"`
	}
	lines := stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true,"lowerBound":{"id":"2","type":"inclusive"}}}`)
	if err := json.Unmarshal(lines[0].Payload, &second); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, second.Time)
	if err != nil {
		t.Fatal(err)
	}
	b.run("all events",
		chromedp.SetValue("#events-subject", "/", chromedp.ByQuery),
		chromedp.Click("#events-load", chromedp.ByQuery),
		chromedp.WaitVisible(`#events-table tr[data-id="3"]`, chromedp.ByQuery),
		chromedp.SetValue("#events-time", at.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.000000000-07:00"), chromedp.ByQuery),
		chromedp.Click("#events-time-go", chromedp.ByQuery))
	b.waitFor("jump to the time of event 2", `document.querySelector("#events-table tbody tr").dataset.id === "2"`, 10*time.Second)
	var disabled bool
	b.eval(`document.querySelector("#events-previous").disabled`, &disabled)
	if disabled {
		t.Errorf("previous page disabled after a jump to event 2")
	}
	b.run("previous page", chromedp.Click("#events-previous", chromedp.ByQuery))
	b.waitFor("back at the start", `document.querySelector("#events-table tbody tr").dataset.id === "0"`, 10*time.Second)
	b.run("a time after the last event", chromedp.SetValue("#events-time", "2999-01-01 00:00", chromedp.ByQuery), chromedp.Click("#events-time-go", chromedp.ByQuery), chromedp.WaitVisible("#events-error", chromedp.ByQuery))
	if msg := b.text("#events-error"); !strings.Contains(msg, "No event at or after 2999-01-01T00:00:00.000000000Z") {
		t.Errorf("jump past the end: %q", msg)
	}

	// Live tail: a newly written event appears.
	b.run("live tail",
		chromedp.Navigate(inst.URL("http")+"/#/live"),
		chromedp.WaitVisible("#live-start", chromedp.ByQuery),
		chromedp.Click("#live-start", chromedp.ByQuery),
	)
	waitUntil(t, 10*time.Second, func() bool { return metrics(t, inst)["eventstore_observers"] == 1 })
	mustWrite(t, inst, candidates("/books/99", lib+"book-acquired"))
	b.run("new event in the live tail", chromedp.WaitVisible(`#live-events li[data-id="4"]`, chromedp.ByQuery))
	// Assistive technology hears a summary, not the list.
	if live := b.attr("#live-events", "aria-live"); live != "" {
		t.Errorf("the live list is a live region (%q)", live)
	}
	b.waitFor("summary", `document.querySelector("#live-summary").textContent === "1 new event" && document.querySelector("#live-summary").getAttribute("role") === "status"`, 10*time.Second)
	b.screenshot("live")

	// Query: rows, and an error with its position.
	b.run("query",
		chromedp.Navigate(inst.URL("http")+"/#/query"),
		chromedp.WaitVisible("#query-text", chromedp.ByQuery),
		chromedp.SetValue("#query-text", `FROM e IN events WHERE e.type == "`+lib+`book-acquired" PROJECT INTO { id: e.id, subject: e.subject }`, chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#view-query[data-state="done"]`, chromedp.ByQuery),
	)
	if got := b.attr("#query-count", "data-value"); got != "3" {
		t.Errorf("query rows: %q, want 3", got)
	}
	if table := b.text("#query-table"); !strings.Contains(table, "/books/99") || !strings.Contains(table, "subject") {
		t.Errorf("query table %q", table)
	}
	b.screenshot("query")
	b.run("query error",
		chromedp.SetValue("#query-text", "FROM e IN events WHERE x.id == '1' PROJECT INTO e", chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible("#query-error", chromedp.ByQuery),
	)
	if msg := b.text("#query-error"); !strings.Contains(msg, "line 1, column 24") || !strings.Contains(msg, "unknown alias 'x'") {
		t.Errorf("query error %q", msg)
	}
	// A runtime error after some rows: the rows stay, the message says so.
	b.run("query runtime error",
		chromedp.SetValue("#query-text", "FROM e IN events PROJECT INTO 10 / (2 - e.id AS INT)", chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#view-query[data-state="error"]`, chromedp.ByQuery),
	)
	if msg, rows := b.text("#query-error"), b.attr("#query-count", "data-value"); !strings.Contains(msg, "after 2 rows: query failed:") || rows != "2" {
		t.Errorf("runtime error: %q with %s rows", msg, rows)
	}
	// The JSON view shows each row as received.
	b.run("query as JSON",
		chromedp.SetValue("#query-text", `FROM e IN events WHERE e.id == "1" PROJECT INTO e.data`, chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#view-query[data-state="done"]`, chromedp.ByQuery),
		chromedp.Click("#query-as-json", chromedp.ByQuery),
	)
	if row := b.text(`#query-table [aria-rowindex="2"]`); row != `{"hash":"not the hash","title":"Éclair \u003c\u0026\u003e \u2028","z":1.5}` {
		t.Errorf("JSON row %q", row)
	}
	b.run("query as a table", chromedp.Click("#query-as-table", chromedp.ByQuery))

	// Event types: register a schema.
	schemaType := lib + "book-acquired"
	b.run("register a schema",
		chromedp.Navigate(inst.URL("http")+"/#/types"),
		chromedp.WaitVisible(`#types-table tr[data-type="`+schemaType+`"]`, chromedp.ByQuery),
		chromedp.SetValue("#register-type", schemaType, chromedp.ByQuery),
		chromedp.SetValue("#register-schema", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, chromedp.ByQuery),
		chromedp.Click("#register-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#register-result", chromedp.ByQuery),
	)
	if r := inst.Do("POST", "/api/v1/read-event-type", harness.Token, `{"eventType":"`+schemaType+`"}`); r.StatusCode != 200 || !strings.Contains(string(r.Body), `"required":["n"]`) {
		t.Errorf("registered schema: %d %s", r.StatusCode, r.Body)
	}
	b.screenshot("types")

	// Log out: the token is forgotten.
	b.run("log out", chromedp.Click("#logout", chromedp.ByQuery), chromedp.WaitVisible("#login", chromedp.ByQuery))
	var stored string
	b.run("session storage", chromedp.Evaluate(`sessionStorage.getItem("eventstore.token") || ""`, &stored))
	if stored != "" {
		t.Errorf("token still stored after logout")
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// oneLineJS reports whether every element matching the selector passed as
// sel shows its text on one line (ids and times must not wrap).
const oneLineJS = `((sel) => [...document.querySelectorAll(sel)].filter((e) => {
  const r = document.createRange();
  r.selectNodeContents(e);
  return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1;
}).map((e) => e.textContent))`

// TestUINarrowScreen checks the console on a 390-px wide screen, by
// keyboard: the navigation is a menu, every view fits without scrolling
// sideways, tables are stacked cards, ids and times do not wrap, and the
// event detail leaves its row in view.
func TestUINarrowScreen(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	mustWrite(t, inst, candidates("/books/42", lib+"book-acquired", "/books/42/notes/1234567890", lib+"book-annotated-with-a-long-type-name"))
	b := newBrowser(t, 390, 844)
	// Headless windows are at least 500 px wide: emulate the phone's viewport.
	b.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.allowDownloads() // the backup of the Operations view
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	notWrapped := func(view, sel string) {
		t.Helper()
		var wrapped []string
		b.eval(oneLineJS+`(`+strconv.Quote(sel)+`)`, &wrapped)
		if len(wrapped) > 0 {
			t.Errorf("%s: wrapped on a phone: %v", view, wrapped)
		}
	}
	isCard := func(view, sel string) {
		t.Helper()
		var display, label string
		b.eval(`getComputedStyle(document.querySelector(`+strconv.Quote(sel+" tbody tr")+`)).display`, &display)
		b.eval(`getComputedStyle(document.querySelector(`+strconv.Quote(sel+" tbody td[data-label]")+`), "::before").content`, &label)
		if display != "block" || label == "none" || label == "" {
			t.Errorf("%s: %s is not a stack of cards: row display %q, label %q", view, sel, display, label)
		}
	}
	for _, view := range []string{"dashboard", "subjects", "events", "live", "query", "types", "operations"} {
		// The menu, by keyboard.
		var listShown bool
		b.eval(`getComputedStyle(document.querySelector("#nav-list")).display !== "none"`, &listShown)
		if listShown {
			t.Fatalf("%s: the navigation is not collapsed into a menu", view)
		}
		b.tabTo("#nav-toggle", true)
		b.key(kb.Enter)
		b.waitFocus("link:#/dashboard")
		if b.attr("#nav-toggle", "aria-expanded") != "true" {
			t.Errorf("menu open but aria-expanded %q", b.attr("#nav-toggle", "aria-expanded"))
		}
		if view != "dashboard" {
			b.tabTo("link:#/"+view, false)
		}
		if view == "subjects" {
			b.screenshot("narrow-menu")
		}
		b.key(kb.Enter) // also for the view already shown
		b.waitFocus("#h-" + view)
		b.waitFor("menu closed", `document.querySelector("#nav-toggle").getAttribute("aria-expanded") === "false"`, 5*time.Second)

		switch view {
		case "dashboard":
			isCard(view, "#checks")
			// The charts keep a legible width.
			var plot float64
			b.eval(`Math.min(...[...document.querySelectorAll(".chart svg")].map((s) => s.getBoundingClientRect().width))`, &plot)
			if plot < 300 {
				t.Errorf("dashboard: charts %.0f px wide on a phone", plot)
			}
			b.eval(`document.querySelector("#h-trends").scrollIntoView(), true`, nil)
			b.screenshot("narrow-dashboard-charts")
			b.eval(`scrollTo(0, 0), true`, nil)
		case "subjects":
			b.waitFor("tree", `document.querySelector('#subject-tree [data-subject="/books"]')`, 10*time.Second)
		case "events":
			b.waitFor("events", `document.querySelector('#events-table tr[data-id="1"]')`, 10*time.Second)
			isCard(view, "#events-table")
			notWrapped(view, "#events-table td.num, #events-table td.time")
			// The detail is a bottom sheet; the row stays above it.
			b.run("open the detail", chromedp.Click(`#events-table tr[data-id="1"]`, chromedp.ByQuery), chromedp.WaitVisible(`#event-verified[data-state="verified"]`, chromedp.ByQuery))
			var visible bool
			b.eval(`(() => { const r = document.querySelector('#events-table tr[data-id="1"]').getBoundingClientRect(); const p = document.querySelector("#event-detail").getBoundingClientRect(); return r.top >= 0 && r.bottom <= p.top + 1; })()`, &visible)
			if !visible {
				t.Errorf("events: the selected row is hidden by the detail")
			}
			b.waitFocus("#event-detail")
			b.screenshot("narrow-events-detail")
			b.key(kb.Escape)
			b.waitFocus("event:1")
		case "live":
			b.run("start", chromedp.Click("#live-start", chromedp.ByQuery))
			waitUntil(t, 10*time.Second, func() bool { return metrics(t, inst)["eventstore_observers"] == 1 })
			mustWrite(t, inst, candidates("/books/42", lib+"book-borrowed"))
			b.run("live event", chromedp.WaitVisible(`#live-events li[data-id="2"]`, chromedp.ByQuery))
			notWrapped(view, "#live-events .num, #live-events .time")
			b.run("stop", chromedp.Click("#live-stop", chromedp.ByQuery))
		case "query":
			b.run("run", chromedp.Click("#query-run", chromedp.ByQuery), chromedp.WaitVisible(`#view-query[data-state="done"]`, chromedp.ByQuery))
			var display string
			b.eval(`getComputedStyle(document.querySelector('#query-table [aria-rowindex="2"]')).display`, &display)
			if display != "block" {
				t.Errorf("query: rows are not cards (display %q)", display)
			}
		case "types":
			b.waitFor("types", `document.querySelector('#types-table tr[data-type]')`, 10*time.Second)
			isCard(view, "#types-table")
		case "operations":
			narrowOperations(t, b)
		}
		var width int
		b.run(view, chromedp.Sleep(300*time.Millisecond), chromedp.Evaluate(`document.documentElement.scrollWidth`, &width))
		if width > 390 {
			var wide []string
			b.run("wide elements", chromedp.Evaluate(`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > 391 && !e.closest("nav, .table-wrap, .vlist")).slice(0, 12).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`, &wide))
			t.Errorf("%s is %d px wide on a 390-px screen: %v", view, width, wide)
		}
		b.screenshot("narrow-" + view)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
