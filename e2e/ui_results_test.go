package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// A store of gridEvents events whose cross join is a query of gridEvents²
// rows: 2,250,000 rows of about 350 bytes, some 750 MiB, beyond what
// Chromium reads back from Blobs (NotReadableError from about 500 MiB).
const (
	gridEvents = 1500
	gridQuery  = `FROM a IN events FROM b IN events PROJECT INTO { a: a.id, b: b.id, subject: b.subject, data: b.data }`
)

// writeGridStore writes n events /grid/<i> whose data pad the rows.
func writeGridStore(t *testing.T, inst *harness.Instance, n int) {
	t.Helper()
	for first := 0; first < n; first += 500 {
		var events []string
		for i := first; i < min(first+500, n); i++ {
			// Hex digits: the blocks compress no better than hashes do.
			sum := sha256.Sum256([]byte(strconv.Itoa(i)))
			pad := strings.Repeat(hex.EncodeToString(sum[:]), 4)
			events = append(events, fmt.Sprintf(`{"source":"https://shop.example.com","subject":"/grid/%d","type":"com.example.grid","data":{"i":%d,"pad":%q}}`, i, i, pad))
		}
		mustWrite(t, inst, `{"events":[`+strings.Join(events, ",")+`]}`)
	}
}

// gridRow is a row of the query grid as shown: its index (0-based) and
// the cells a, b and subject, or the first cell's text when it has none.
type gridRow struct {
	Index      int
	A, B, Subj string
	Text       string
	Failed     bool
}

// shownRowsJS lists the grid rows in the viewport of #query-table.
const shownRowsJS = `(() => {
  const grid = document.querySelector("#query-table");
  const view = grid.getBoundingClientRect();
  const head = document.querySelector("#query-head").getBoundingClientRect();
  const cell = (row, k) => [...row.children].find((c) => c.dataset.label === k)?.textContent ?? "";
  return [...grid.querySelectorAll(".vlist-body > .vrow")].filter((row) => {
    const r = row.getBoundingClientRect();
    return r.bottom > head.bottom && r.top < view.bottom;
  }).map((row) => ({
    Index: Number(row.getAttribute("aria-rowindex")) - 2,
    A: cell(row, "a"), B: cell(row, "b"), Subj: cell(row, "subject"),
    Text: row.firstElementChild.textContent, Failed: row.classList.contains("vfail"),
  }));
})()`

// shownRows waits until every row in view of the query grid has its
// content (none says "…") and returns them.
func (b *browser) shownRows(what string) []gridRow {
	b.t.Helper()
	b.waitFor(what, `(() => { const rows = `+shownRowsJS+`; return rows.length > 0 && rows.every((r) => r.Text !== "…"); })()`, 20*time.Second)
	var rows []gridRow
	b.eval(shownRowsJS, &rows)
	return rows
}

// checkGridRows checks that rows hold the cross join's rows at their
// indexes: row r is (a, b) = (r / n, r % n).
func checkGridRows(t *testing.T, where string, rows []gridRow, n int) {
	t.Helper()
	for _, r := range rows {
		a, bb := strconv.Itoa(r.Index/n), strconv.Itoa(r.Index%n)
		if r.Failed || r.A != a || r.B != bb || r.Subj != "/grid/"+bb {
			t.Errorf("%s: row %d shows a=%q b=%q subject=%q (%q), want a=%s b=%s subject=/grid/%s", where, r.Index+1, r.A, r.B, r.Subj, r.Text, a, bb, bb)
		}
	}
}

// scrollGrid scrolls the query grid to fraction (0..1) of its height.
func (b *browser) scrollGrid(fraction float64) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`(() => { const g = document.querySelector("#query-table"); g.scrollTop = %f * (g.scrollHeight - g.clientHeight); return true; })()`, fraction), nil)
}

// runQuery runs query in the console's Query view and waits until it is
// no longer running; it returns the time it took in ms.
func (b *browser) runQuery(query string, within time.Duration) float64 {
	b.t.Helper()
	b.eval(`location.hash = "#/query"`, nil)
	b.waitFor("query view", `!document.querySelector("#view-query").hidden`, 5*time.Second)
	b.run("query text", chromedp.SetValue("#query-text", query, chromedp.ByQuery))
	start := b.now()
	b.run("run", chromedp.Click("#query-run", chromedp.ByQuery))
	return b.waitFor("query ended", `document.querySelector("#view-query").dataset.state !== "running"`, within) - start
}

// TestUIQueryMillionsOfRows runs a query of 2,250,000 rows (some 750 MiB)
// in the console and shows rows from its middle and its very end with
// their content: every row the count promises can be seen, read back from
// the tab's IndexedDB database, while the tab stays small.
func TestUIQueryMillionsOfRows(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	writeGridStore(t, inst, gridEvents)
	b := newBrowser(t, 1280, 900)
	b.monitorStalls()
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))

	const rows = gridEvents * gridEvents
	var peakHeap, peakRSS float64
	b.eval(`location.hash = "#/query"`, nil)
	b.waitFor("query view", `!document.querySelector("#view-query").hidden`, 5*time.Second)
	b.run("query text", chromedp.SetValue("#query-text", gridQuery, chromedp.ByQuery))
	b.resetStalls()
	start := b.now()
	b.run("run", chromedp.Click("#query-run", chromedp.ByQuery))
	peakHeap, peakRSS = b.whileRunning("query", "#view-query", "#query-error", "#query-count")
	took := b.now() - start
	stall := b.stalls()
	if got := b.attr("#query-count", "data-value"); got != strconv.Itoa(rows) {
		t.Fatalf("rows %s, want %d (%s)", got, rows, b.text("#query-count"))
	}
	// The blocks are in the tab's IndexedDB database (which compresses
	// them).
	var kept struct {
		Usage     float64
		Databases []string
	}
	b.await(`Promise.all([navigator.storage.estimate(), indexedDB.databases()]).then(([e, d]) => ({ Usage: e.usage / 1048576, Databases: d.map((x) => x.name) }))`, &kept)
	if len(kept.Databases) != 1 || !strings.HasPrefix(kept.Databases[0], "eventstore-console-rows-") {
		t.Errorf("IndexedDB databases %v, want the tab's one", kept.Databases)
	}
	var size float64
	b.eval(`Number(document.querySelector("#query-count").dataset.bytes) / 1048576`, &size)

	// The middle and the last fifth, by the scrollbar, then the last row
	// by keyboard: all with their content.
	for _, at := range []float64{0.5, 0.83, 0.999} {
		b.scrollGrid(at)
		shown := b.shownRows(fmt.Sprintf("rows at %.1f%%", at*100))
		checkGridRows(t, fmt.Sprintf("at %.1f%%", at*100), shown, gridEvents)
		if first := shown[0].Index; float64(first) < at*float64(rows)-100 {
			t.Errorf("scrolled to %.1f%%: first row shown %d", at*100, first+1)
		}
	}
	b.scrollGrid(0)
	b.shownRows("first rows again")
	b.run("focus grid", chromedp.Focus(`#query-table [aria-rowindex="2"]`, chromedp.ByQuery))
	b.key(kb.End)
	b.waitFor("last row", `document.activeElement.getAttribute("aria-rowindex") === "`+strconv.Itoa(rows+1)+`"`, 10*time.Second)
	shown := b.shownRows("last rows")
	checkGridRows(t, "at the end", shown, gridEvents)
	if last := shown[len(shown)-1]; last.Index != rows-1 || last.A != strconv.Itoa(gridEvents-1) || last.B != strconv.Itoa(gridEvents-1) {
		t.Errorf("last row shown: %+v, want row %d (a=b=%d)", last, rows, gridEvents-1)
	}
	if msg := b.text("#query-read-error"); msg != "" {
		t.Errorf("read error: %s", msg)
	}
	heap, rss := b.memory()
	peakHeap, peakRSS = max(peakHeap, heap), max(peakRSS, rss)
	b.screenshot("query-millions-end")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	t.Logf("query of %d rows, %.0f MiB: done in %.1f s; longest stall %.0f ms; IndexedDB %.0f MiB; JS heap peak %.1f MiB, renderer peak %.0f MiB",
		rows, size, took/1000, stall.Gap, kept.Usage, peakHeap, peakRSS)
	if size < 600 {
		t.Errorf("the result is %.0f MiB, want more than Chromium reads back from Blobs", size)
	}
	if stall.Gap > maxStall {
		t.Errorf("main thread stalled %.0f ms, bound %.0f ms", stall.Gap, maxStall)
	}
	if peakHeap > maxHeapMiB || peakRSS > maxRSSMiB {
		t.Errorf("memory: JS heap peak %.1f MiB (bound %.0f), renderer peak %.0f MiB (bound %.0f)", peakHeap, maxHeapMiB, peakRSS, maxRSSMiB)
	}
}

// TestUIQueryBlocksFail makes the browser fail to keep or read back the
// blocks of a query's rows and checks that the console says so: a row is
// never left as "…" for good, and the count never promises rows that
// cannot be shown.
func TestUIQueryBlocksFail(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	writeGridStore(t, inst, 300)
	// 90,000 rows of about 300 bytes: some 26 MiB, 7 blocks of 4 MiB, more
	// than the page keeps in memory (6).
	const query = `FROM a IN events FROM b IN events PROJECT INTO { a: a.id, b: b.id, subject: b.subject, data: b.data }`
	const rows = 300 * 300

	cases := []struct {
		name string
		// setup runs in the page before its scripts.
		setup string
		// stopped: the query stops early, with this in its message; else
		// it ends done and the first rows fail to read back with read in
		// the message.
		stopped, read string
	}{
		{
			name:  "indexeddb read",
			setup: `IDBObjectStore.prototype.get = function () { throw new DOMException("simulated read failure", "NotReadableError"); };`,
			read:  "NotReadableError: simulated read failure",
		},
		{
			name: "blob read",
			setup: `IDBFactory.prototype.open = function () { throw new DOMException("simulated: storage is turned off", "SecurityError"); };
Blob.prototype.arrayBuffer = function () { return Promise.reject(new DOMException("simulated read failure", "NotReadableError")); };`,
			read: "NotReadableError: simulated read failure",
		},
		{
			name:    "indexeddb write",
			setup:   `IDBObjectStore.prototype.put = function () { throw new DOMException("simulated full disk", "QuotaExceededError"); };`,
			stopped: "the browser could not keep more of the result (QuotaExceededError: simulated full disk)",
		},
		{
			name:    "limit",
			setup:   `addEventListener("DOMContentLoaded", () => import("/lines.js").then((m) => { m.limits.disk = 10 << 20; }));`,
			stopped: "the console keeps at most 10 MiB of a result in the browser",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBrowser(t, 1280, 900)
			b.run("setup", chromedp.ActionFunc(func(ctx context.Context) error {
				_, err := page.AddScriptToEvaluateOnNewDocument(c.setup).Do(ctx)
				return err
			}))
			b.signIn(inst, harness.Token)
			b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
			b.runQuery(query, 60*time.Second)
			state := b.attr("#view-query", "data-state")
			count, _ := strconv.Atoi(b.attr("#query-count", "data-value"))

			if c.stopped != "" {
				msg := b.text("#query-error")
				if state != "stopped" || count == 0 || count >= rows || !strings.Contains(msg, c.stopped) || !strings.Contains(msg, "stopped after "+formatCount(count)+" rows") {
					t.Fatalf("state %q, %d rows, message %q; want stopped early, saying %q", state, count, msg, c.stopped)
				}
				t.Logf("%d rows: %s", count, msg)
				if got := b.text("#query-count"); !strings.Contains(got, formatCount(count)+" rows kept") {
					t.Errorf("count says %q", got)
				}
				// Every row counted can be seen: the first and the last.
				checkGridRows(t, "first rows", b.shownRows("first rows"), 300)
				b.run("focus grid", chromedp.Focus(`#query-table [aria-rowindex="2"]`, chromedp.ByQuery))
				b.key(kb.End)
				b.waitFor("last row", `document.activeElement.getAttribute("aria-rowindex") === "`+strconv.Itoa(count+1)+`"`, 10*time.Second)
				checkGridRows(t, "last rows", b.shownRows("last rows"), 300)
				var disabled bool
				b.eval(`document.querySelector("#query-export").disabled`, &disabled)
				if disabled {
					t.Errorf("Export NDJSON disabled after the query stopped")
				}
			} else {
				if state != "done" || count != rows {
					t.Fatalf("state %q, %d rows: want done, %d (%s)", state, count, rows, b.text("#query-error"))
				}
				// The first block was evicted: reading it back fails.
				b.run("focus grid", chromedp.Focus(`#query-table [aria-rowindex="2"]`, chromedp.ByQuery))
				b.key(kb.End)
				b.shownRows("last rows")
				b.key(kb.Home)
				b.waitFor("read error", `!document.querySelector("#query-read-error").hidden`, 10*time.Second)
				msg := b.text("#query-read-error")
				t.Logf("%s", msg)
				if !strings.HasPrefix(msg, "Rows 1–") || !strings.Contains(msg, c.read) {
					t.Errorf("read error %q, want rows from 1 and %q", msg, c.read)
				}
				shown := b.shownRows("first rows")
				for _, r := range shown {
					if !r.Failed || !strings.HasPrefix(r.Text, "Cannot be shown") {
						t.Errorf("row %d: %q (failed %v), want it to say it cannot be shown", r.Index+1, r.Text, r.Failed)
						break
					}
				}
				// The error stays with the rows: scrolling away and back
				// shows it again, and never "…".
				b.key(kb.End)
				b.key(kb.Home)
				if again := b.shownRows("first rows again"); !again[0].Failed {
					t.Errorf("first row after scrolling back: %+v", again[0])
				}
				b.screenshot("query-read-error")
			}
			if errs := b.consoleErrors(); len(errs) > 0 {
				t.Errorf("console errors: %v", errs)
			}
		})
	}
}

// await evaluates expression in the page, waits for the promise it gives
// and stores its value in out.
func (b *browser) await(expression string, out any) {
	b.t.Helper()
	b.run("evaluate "+expression, chromedp.Evaluate(expression, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}

// rowDatabases lists the console's IndexedDB databases of query rows.
func (b *browser) rowDatabases() []string {
	b.t.Helper()
	var names []string
	b.await(`indexedDB.databases().then((d) => d.map((x) => x.name).filter((n) => n.startsWith("eventstore-console-rows-")).sort())`, &names)
	return names
}

// TestUIQueryBlocksGoWithThePage checks that the rows a tab keeps on disk
// go with it: its database is deleted when the page is left, and one whose
// page was not seen for an hour (a crashed tab) is deleted by the next
// page that keeps rows, while a live page's stays.
func TestUIQueryBlocksGoWithThePage(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	writeGridStore(t, inst, 300)
	b := newBrowser(t, 1280, 900)
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	b.await(`(async () => {
  const seen = { "eventstore-console-rows-crashed": Date.now() - 2 * 3600 * 1000, "eventstore-console-rows-live": Date.now() };
  for (const name of Object.keys(seen)) {
    await new Promise((resolve, reject) => {
      const r = indexedDB.open(name, 1);
      r.onupgradeneeded = () => r.result.createObjectStore("blocks");
      r.onsuccess = () => { r.result.close(); resolve(); };
      r.onerror = () => reject(r.error);
    });
  }
  localStorage.setItem("eventstore.rows", JSON.stringify(seen));
  return true;
})()`, nil)

	b.runQuery(`FROM a IN events FROM b IN events PROJECT INTO { a: a.id, b: b.id, subject: b.subject, data: b.data }`, 60*time.Second)
	names := b.rowDatabases()
	var own string
	for _, n := range names {
		if n != "eventstore-console-rows-live" {
			own = n
		}
	}
	if len(names) != 2 || own == "" || !strings.Contains(strings.Join(names, " "), "eventstore-console-rows-live") {
		t.Fatalf("after a query: databases %v, want the live page's and the tab's own (the crashed page's deleted)", names)
	}

	b.run("reload", chromedp.Reload())
	deadline := time.Now().Add(10 * time.Second)
	for names = b.rowDatabases(); len(names) != 1 && time.Now().Before(deadline); names = b.rowDatabases() {
		time.Sleep(100 * time.Millisecond)
	}
	if len(names) != 1 || names[0] != "eventstore-console-rows-live" {
		t.Errorf("after leaving the page: databases %v, want the live page's only (%s deleted)", names, own)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
