package e2e

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// contrastJS returns the colours of the element sel and their contrast
// ratio (WCAG 2), whether it is hovered, and whether it is focused.
const contrastJS = `((sel) => {
  const e = document.querySelector(sel);
  const s = getComputedStyle(e);
  const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [lum(s.color), lum(s.backgroundColor)].sort((x, y) => y - x);
  return { Color: s.color, Background: s.backgroundColor, Ratio: (a + 0.05) / (b + 0.05), Hovered: e.matches(":hover"), Focused: e === document.activeElement };
})`

type contrast struct {
	Color, Background string
	Ratio             float64
	Hovered, Focused  bool
}

// hover moves the mouse to the middle of the element sel.
func (b *browser) hover(sel string) {
	b.t.Helper()
	var at struct{ X, Y float64 }
	b.eval(`(() => { const r = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect(); return { X: r.left + r.width / 2, Y: r.top + r.height / 2 }; })()`, &at)
	b.run("hover "+sel, chromedp.MouseEvent(input.MouseMoved, at.X, at.Y))
}

// checkPressed checks that the pressed toggle sel keeps the accent
// background and a legible contrast when hovered and when focused.
func checkPressed(t *testing.T, b *browser, sel, elsewhere string) {
	t.Helper()
	if got := b.attr(sel, "aria-pressed"); got != "true" {
		t.Fatalf("%s: aria-pressed %q", sel, got)
	}
	var plain contrast
	b.hover(elsewhere)
	b.eval(contrastJS+`(`+strconv.Quote(sel)+`)`, &plain)
	b.hover(sel)
	var hovered contrast
	b.eval(contrastJS+`(`+strconv.Quote(sel)+`)`, &hovered)
	b.run("focus "+sel, chromedp.Focus(sel, chromedp.ByQuery))
	var both contrast
	b.eval(contrastJS+`(`+strconv.Quote(sel)+`)`, &both)
	if !hovered.Hovered || !both.Focused {
		t.Fatalf("%s: not hovered (%+v) or not focused (%+v)", sel, hovered, both)
	}
	for what, c := range map[string]contrast{"pressed": plain, "pressed and hovered": hovered, "pressed, hovered and focused": both} {
		if c.Ratio < 4.5 || c.Color != "rgb(255, 255, 255)" {
			t.Errorf("%s %s: %s on %s, contrast %.2f", sel, what, c.Color, c.Background, c.Ratio)
		}
	}
	if plain.Background == "rgb(255, 255, 255)" || hovered.Background == "rgb(238, 243, 251)" {
		t.Errorf("%s: background %s, hovered %s: not the pressed colours", sel, plain.Background, hovered.Background)
	}
}

// cellJS describes the cell sel: its overflow style, whether its text is
// cut, its title and text, and whether the table fits its frame.
const cellJS = `((sel) => {
  const e = document.querySelector(sel);
  const s = getComputedStyle(e);
  const wrap = e.closest(".table-wrap");
  return { TextOverflow: s.textOverflow, Overflow: s.overflowX, WhiteSpace: s.whiteSpace, Cut: e.scrollWidth > e.clientWidth,
    Title: e.title, Text: e.textContent, Fits: wrap.scrollWidth <= wrap.clientWidth + 1, Width: e.getBoundingClientRect().width };
})`

type cellState struct {
	TextOverflow, Overflow, WhiteSpace string
	Cut, Fits                          bool
	Title, Text                        string
	Width                              float64
}

// queryColumns runs query in the Query view and returns the grid's column headers.
func queryColumns(b *browser, query string) []string {
	b.t.Helper()
	b.run("query "+query,
		chromedp.SetValue("#query-text", query, chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#view-query[data-state="done"]`, chromedp.ByQuery))
	b.waitFor("the columns", `document.querySelectorAll('#query-head [role="columnheader"]').length > 0`, 5*time.Second)
	var columns []string
	b.eval(`[...document.querySelectorAll('#query-head [role="columnheader"]')].map((c) => c.textContent)`, &columns)
	return columns
}

// ddOf returns the JS expression of the dd after the diagnostics' dt key.
func ddOf(key string) string {
	return `[...document.querySelectorAll("#diagnostics-report dt")].find((d) => d.textContent === ` + strconv.Quote(key) + `).nextElementSibling`
}

// TestUIDetails checks the console's details of issue 35: a pressed toggle
// keeps its colours on hover and focus; a long type beside the event
// detail wraps whole; the paging words follow the order; query
// columns come as id, time, subject, type, the others, data; the charts'
// time axis spans the samples of a fresh tab; a query refused at once
// shows no row count; the diagnostics say "none" for no memory limit and
// show the engine's levels as a table; Register is disabled in read-only
// mode with the reason; the subject tree's expand arrow is a big enough
// target; a skip link leads to the view; a dialog keeps the focus.
func TestUIDetails(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	longType := lib + "book-annotated-with-a-remarkably-long-event-type-name-for-the-narrow-column"
	var pairs []string
	for i := range 60 {
		pairs = append(pairs, fmt.Sprintf("/books/%d", i%3), lib+"book-borrowed")
	}
	mustWrite(t, inst, candidates(pairs...))
	mustWrite(t, inst, candidates("/books/long/subject/that/goes/on/and/on/for/quite/a/while", longType))
	b := newBrowser(t, 1280, 900)
	b.signIn(inst, harness.Token)
	signedIn := time.Now()
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))

	// The charts of a fresh tab: the time axis spans the samples so far,
	// the oldest at the left edge, not 15 minutes with the samples at the right.
	b.waitFor("four samples", `Number(document.querySelector("#chart-observers").dataset.points) >= 4`, 20*time.Second)
	var chart struct {
		Span, First, MinX float64
		Summary, Range    string
	}
	b.eval(`(() => {
		const f = document.querySelector("#chart-observers");
		const xs = [...f.querySelectorAll("polyline")].flatMap((p) => p.getAttribute("points").split(" ").map((xy) => Number(xy.split(",")[0])));
		return { Span: Number(f.dataset.span), First: Number(f.dataset.first), MinX: Math.min(...xs), Summary: f.querySelector(".chart-summary").textContent, Range: f.querySelector(".chart-range").textContent };
	})()`, &chart)
	elapsed := time.Since(signedIn)
	if chart.Span < 4000 || chart.Span > float64(elapsed.Milliseconds())+2000 || chart.First > 1 || chart.MinX > 1 {
		t.Errorf("fresh chart after %s: span %.0f ms, first sample at x %.1f, line from x %.1f", elapsed, chart.Span, chart.First, chart.MinX)
	}
	if !regexp.MustCompile(`over the last \d+ seconds\.$`).MatchString(chart.Summary) || !strings.HasPrefix(chart.Range, "last ") {
		t.Errorf("fresh chart: summary %q, range %q", chart.Summary, chart.Range)
	}
	b.screenshot("details-fresh-charts")

	// The skip link: the first tab stop, shown on focus, leading past the
	// header and the menu to the view's heading.
	b.waitFocus("#h-dashboard")
	b.tabTo("#skip-link", true)
	if got := b.tab(true); got != "body" {
		t.Errorf("Shift+Tab before the skip link went to %s", got)
	}
	if got := b.tab(false); got != "#skip-link" {
		t.Errorf("the first tab stop is %s, not the skip link", got)
	}
	var shown bool
	b.eval(`(() => { const r = document.querySelector("#skip-link").getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight && r.width > 0; })()`, &shown)
	b.screenshot("details-skip-link")
	b.key(kb.Enter)
	b.waitFocus("#h-dashboard")
	var inMain, offScreen bool
	b.eval(`!!document.activeElement.closest("main") && !document.activeElement.closest("nav")`, &inMain)
	b.eval(`document.querySelector("#skip-link").getBoundingClientRect().bottom <= 0`, &offScreen)
	if !shown || !offScreen || !inMain {
		t.Errorf("skip link: shown on focus %v, hidden without %v, focus in main %v", shown, offScreen, inMain)
	}

	// Query: the pressed toggle on hover; the columns in order; no row
	// count for a query refused at once.
	b.eval(`location.hash = "#/query"`, nil)
	b.waitFocus("#h-query")
	checkPressed(t, b, "#query-as-table", "#h-query")
	b.run("JSON", chromedp.Click("#query-as-json", chromedp.ByQuery))
	checkPressed(t, b, "#query-as-json", "#h-query")
	b.screenshot("details-pressed-hovered")
	b.run("table", chromedp.Click("#query-as-table", chromedp.ByQuery))

	columns := queryColumns(b, "FROM e IN events PROJECT INTO e")
	first := stream(t, inst, "/api/v1/run-eventql-query", `{"query":"FROM e IN events PROJECT INTO e"}`)[0]
	var want []string
	want = append(want, "id", "time", "subject", "type")
	for _, key := range keyOrder(t, first.Payload) {
		if !strings.Contains(" id time subject type data ", " "+key+" ") {
			want = append(want, key)
		}
	}
	want = append(want, "data")
	if strings.Join(columns, ",") != strings.Join(want, ",") {
		t.Errorf("columns of PROJECT INTO e: %v, want %v", columns, want)
	}
	b.screenshot("details-query-columns")
	columns = queryColumns(b, `FROM e IN events PROJECT INTO { data: e.data, source: e.source, type: e.type, hash: e.hash, id: e.id }`)
	if got := strings.Join(columns, ","); got != "id,type,source,hash,data" {
		t.Errorf("columns of a projection: %s, want id,type,source,hash,data", got)
	}

	b.run("a query refused at once",
		chromedp.SetValue("#query-text", "FROM e IN events WHERE x.id == '1' PROJECT INTO e", chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#view-query[data-state="error"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#query-error", chromedp.ByQuery))
	if count := b.text("#query-count"); count != "" {
		t.Errorf("a query answered 400 says %q", count)
	}
	b.run("a query failing after rows",
		chromedp.SetValue("#query-text", "FROM e IN events PROJECT INTO 10 / (2 - e.id AS INT)", chromedp.ByQuery),
		chromedp.Click("#query-run", chromedp.ByQuery),
		chromedp.WaitVisible(`#view-query[data-state="error"]`, chromedp.ByQuery))
	b.waitFor("the count", `document.querySelector("#query-count").textContent !== ""`, 5*time.Second)
	if count := b.text("#query-count"); count != "2 rows before the error" {
		t.Errorf("a query failing after 2 rows says %q", count)
	}

	// Live tail: Pause pressed keeps its colours on hover.
	b.eval(`location.hash = "#/live"`, nil)
	b.waitFocus("#h-live")
	b.run("start", chromedp.Click("#live-start", chromedp.ByQuery))
	b.waitFor("connected", `document.querySelector("#live-status").dataset.state === "connected"`, 10*time.Second)
	b.run("pause", chromedp.Click("#live-pause", chromedp.ByQuery))
	checkPressed(t, b, "#live-pause", "#h-live")
	b.run("stop", chromedp.Click("#live-stop", chromedp.ByQuery))

	// Events: the paging words follow the order.
	b.eval(`location.hash = "#/events?subject=/"`, nil)
	b.waitFor("chronological page", `document.querySelector('#events-table tr[data-id="0"]')`, 10*time.Second)
	if info := b.text("#events-info"); !strings.Contains(info, "from the start") || b.text("#events-next") != "Next page" {
		t.Errorf("chronological paging: %q, next %q", info, b.text("#events-next"))
	}
	b.run("newest first",
		chromedp.SetValue("#events-order", "antichronological", chromedp.ByQuery),
		chromedp.Click("#events-load", chromedp.ByQuery))
	b.waitFor("newest page", `document.querySelector("#events-table tbody tr").dataset.id === "60"`, 10*time.Second)
	info := b.text("#events-info")
	if !strings.Contains(info, "from the newest") || strings.Contains(info, "start") || strings.Contains(info, "end") ||
		b.text("#events-next") != "Older page" || b.text("#events-previous") != "Newer page" || b.text("#events-first") != "Newest page" {
		t.Errorf("newest-first paging: %q; buttons %q, %q, %q", info, b.text("#events-first"), b.text("#events-previous"), b.text("#events-next"))
	}
	b.run("older", chromedp.Click("#events-next", chromedp.ByQuery))
	b.waitFor("older page", `document.querySelector("#events-table tbody tr").dataset.id === "10"`, 10*time.Second)
	if info := b.text("#events-info"); !strings.Contains(info, "to the oldest") || strings.Contains(info, "from the newest") {
		t.Errorf("the older page: %q", info)
	}
	b.run("back to the newest", chromedp.Click("#events-first", chromedp.ByQuery))
	b.waitFor("newest page again", `document.querySelector("#events-table tbody tr").dataset.id === "60"`, 10*time.Second)

	// The long type with the detail open: whole, wrapped in a cell that is
	// not cut (issue 15: cut cells hid the subject and the type), in a
	// table that fits its frame.
	b.run("open the long type's event",
		chromedp.Click(`#events-table tr[data-id="60"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#event-verified[data-state="verified"]`, chromedp.ByQuery))
	var cell cellState
	b.eval(cellJS+`('#events-table tr[data-id="60"] td.type')`, &cell)
	if cell.WhiteSpace == "nowrap" || cell.Cut || cell.Title != longType || cell.Text != longType || !cell.Fits {
		t.Errorf("the long type beside the detail: %+v", cell)
	}
	var subject cellState
	b.eval(cellJS+`('#events-table tr[data-id="60"] td.subject')`, &subject)
	if subject.Cut || subject.Title != subject.Text || !subject.Fits {
		t.Errorf("the long subject beside the detail: %+v", subject)
	}
	b.screenshot("details-events-wrapped")
	b.key(kb.Escape)

	// The subject tree's expand arrow: at least 24 × 24 px here.
	b.eval(`location.hash = "#/subjects"`, nil)
	b.waitFor("tree", `document.querySelector('#subject-tree [data-subject="/books"] .twisty')`, 10*time.Second)
	twisty := func() (w, h, row float64) {
		var r struct{ W, H, Row float64 }
		b.eval(`(() => { const t = document.querySelector('#subject-tree [data-subject="/books"] .twisty').getBoundingClientRect();
			const row = document.querySelector('#subject-tree [data-subject="/books"]').getBoundingClientRect();
			return { W: t.width, H: t.height, Row: row.height }; })()`, &r)
		return r.W, r.H, r.Row
	}
	if w, h, row := twisty(); w < 24 || h < 24 || row < h {
		t.Errorf("twisty at 1280 px: %.0f × %.0f in a row of %.0f", w, h, row)
	}
	b.run("expand by the twisty", chromedp.Click(`#subject-tree [data-subject="/books"] .twisty`, chromedp.ByQuery),
		chromedp.WaitVisible(`#subject-tree [data-subject="/books/0"]`, chromedp.ByQuery))
	b.screenshot("details-twisty")

	// Operations: the diagnostics; the dialog keeps the focus.
	b.eval(`location.hash = "#/operations"`, nil)
	b.waitFocus("#h-operations")
	b.waitFor("diagnostics", `document.querySelector("#diagnostics-report dl")`, 10*time.Second)
	var limit string
	b.eval(ddOf("memoryLimitBytes")+`.textContent`, &limit)
	if limit != "none" {
		t.Errorf("memoryLimitBytes without GOMEMLIMIT shows %q", limit)
	}
	// A cgroup memory limit the machine does not have is null: "none" too.
	if r := inst.Do("GET", "/api/v1/diagnostics", harness.Token, ""); bytes.Contains(r.Body, []byte(`"cgroupMemoryLimit":null`)) {
		var shown string
		b.eval(ddOf("cgroupMemoryLimit")+`.textContent`, &shown)
		if shown != "none" {
			t.Errorf("cgroupMemoryLimit null shows %q", shown)
		}
	}
	// The engine's levels (none in a store this small: the test gives some).
	levels := regexp.MustCompile(`"levels":(null|\[[^\]]*\])`)
	done := b.tamper("/api/v1/diagnostics", func(_ map[string]string, body []byte) []byte {
		return levels.ReplaceAll(body, []byte(`"levels":[{"level":0,"tables":2,"bytes":4096},{"level":6,"tables":1,"bytes":1048576}]`))
	})
	b.run("refresh", chromedp.Click("#diagnostics-refresh", chromedp.ByQuery))
	b.untamper(t, done)
	b.waitFor("levels", ddOf("engine.levels")+`.querySelector("table")`, 10*time.Second)
	var table [][]string
	b.eval(`[...`+ddOf("engine.levels")+`.querySelectorAll("tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`, &table)
	if got := fmt.Sprint(table); got != "[[level tables bytes] [0 2 4096 (4.0 KiB)] [6 1 1048576 (1.0 MiB)]]" {
		t.Errorf("engine levels: %s", got)
	}
	b.eval(`document.querySelector("#diagnostics").scrollIntoView(), true`, nil)
	b.screenshot("details-diagnostics")

	b.run("open the dialog", chromedp.Click("#readonly-open", chromedp.ByQuery), chromedp.WaitVisible("#readonly-dialog", chromedp.ByQuery))
	b.waitFocus("#readonly-cancel")
	var cycle []string
	for range 3 {
		cycle = append(cycle, b.tab(false))
	}
	for range 3 {
		cycle = append(cycle, b.tab(true))
	}
	if got := strings.Join(cycle, " "); got != "#readonly-confirm #readonly-cancel #readonly-confirm #readonly-cancel #readonly-confirm #readonly-cancel" {
		t.Errorf("Tab and Shift+Tab in the dialog: %s", got)
	}
	b.key(kb.Escape)
	b.run("dialog closed", chromedp.WaitNotVisible("#readonly-dialog", chromedp.ByQuery))
	b.waitFocus("#readonly-open")
	if got := b.attr("#mode-value", "data-value"); got != "read-write" {
		t.Errorf("mode %q after Escape", got)
	}

	// Read-only mode: Register is disabled, and says why.
	if r := inst.Do("POST", "/api/v1/put-into-read-only-mode", harness.Token, ""); r.StatusCode != 200 {
		t.Fatalf("put-into-read-only-mode: %d %s", r.StatusCode, r.Body)
	}
	b.eval(`location.hash = "#/types"`, nil)
	b.waitFocus("#h-types")
	b.waitFor("Register disabled", `document.querySelector("#register-submit").disabled`, 10*time.Second)
	if why, by := b.text("#register-denied"), b.attr("#register-submit", "aria-describedby"); !strings.Contains(why, "read-only mode") || by != "register-denied" {
		t.Errorf("Register in read-only mode: note %q, described by %q", why, by)
	}
	b.eval(`document.querySelector("#register").scrollIntoView(), true`, nil)
	b.screenshot("details-register-read-only")

	// A phone: the expand arrow is at least 44 × 44 px, its row as tall.
	b.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.eval(`location.hash = "#/subjects"`, nil)
	b.waitFor("tree", `document.querySelector('#subject-tree [data-subject="/books"] .twisty')`, 10*time.Second)
	if w, h, row := twisty(); w < 44 || h < 44 || row < h {
		t.Errorf("twisty at 390 px: %.0f × %.0f in a row of %.0f", w, h, row)
	}
	b.screenshot("details-narrow-twisty")

	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
