package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// fitCustomers is the number of children /customers/<n> of TestUIFit's
// store: numbers whose text order (1439, 144, 1440) is not their order.
const fitCustomers = 1500

// TestUIFit checks that the console shows what it holds whole and in
// place, in Chromium with classic scrollbars (the tests' others hide
// them): views keep their place with and without a page scrollbar; the
// dashboard's write rate stays on one line; beside the event detail,
// subjects and types wrap instead of being cut; the subject tree sorts
// numbered children by number and says of how many subjects it shows
// some; the last query column heading is clear of the grid's scrollbar.
func TestUIFit(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	var pairs []string
	for i := range fitCustomers {
		pairs = append(pairs, fmt.Sprintf("/customers/%d", i), "com.example.order-placed")
	}
	mustWrite(t, inst, candidates(pairs...))
	const longSubject = "/customers/760/orders/2024-11-28/lines/42/adjustments/discount-for-loyal-customers"
	const longType = "com.example.order-line-adjusted-with-a-loyalty-discount-for-a-long-standing-customer"
	mustWrite(t, inst, candidates(longSubject, longType))
	b := newBrowser(t, 1280, 900, chromedp.Flag("hide-scrollbars", false))
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))

	// No sideways shift: the dashboard is taller than the window, the
	// query view (before a query) is not; main starts at the same x.
	type place struct {
		Left      float64
		Scrollbar bool
	}
	placeOf := func(view string) place {
		b.eval(`location.hash = "#/`+view+`"`, nil)
		b.waitFor(view, `!document.querySelector("#view-`+view+`").hidden`, 5*time.Second)
		var p place
		b.eval(`({ Left: document.querySelector("main").getBoundingClientRect().left, Scrollbar: document.documentElement.scrollHeight > innerHeight })`, &p)
		return p
	}
	dashboard := placeOf("dashboard")
	query := placeOf("query")
	if !dashboard.Scrollbar || query.Scrollbar {
		t.Fatalf("the dashboard needs a page scrollbar (%v) and the query view none (%v) for the check", dashboard.Scrollbar, query.Scrollbar)
	}
	if dashboard.Left != query.Left {
		t.Errorf("main starts at x %.1f on the dashboard (a page scrollbar) and at %.1f on the query view (none): the views shift", dashboard.Left, query.Left)
	}

	// The write rate on one line, within its card, here and on a phone.
	rateJS := `(() => {
  const card = document.querySelector('[data-stat="write-rate"]');
  const value = card.querySelector(".stat-value");
  const c = card.getBoundingClientRect(), v = value.getBoundingClientRect();
  const lines = Math.round(v.height / parseFloat(getComputedStyle(value).lineHeight));
  return { Text: value.textContent, Lines: lines, Inside: v.right <= c.right - parseFloat(getComputedStyle(card).paddingRight) + 0.5 && value.scrollWidth <= Math.ceil(v.width) };
})()`
	type rate struct {
		Text   string
		Lines  int
		Inside bool
	}
	checkRate := func(where string) {
		b.eval(`location.hash = "#/dashboard"`, nil)
		b.waitFor("a write rate", `document.querySelector('[data-stat="write-rate"]').dataset.value !== ""`, 20*time.Second)
		var r rate
		b.eval(rateJS, &r)
		if !strings.HasSuffix(r.Text, " events/s") || r.Lines != 1 || !r.Inside {
			t.Errorf("write rate %s: %q on %d lines, inside its card %v", where, r.Text, r.Lines, r.Inside)
		}
	}
	checkRate("at 1280 px")

	// Beside the event detail: the long subject and type whole, wrapped
	// in cells that are not cut, in a table that fits its frame.
	b.eval(`location.hash = "#/events?subject=`+longSubject+`"`, nil)
	b.waitFor("events", `document.querySelector('#events-table tr[data-id="1500"]')`, 10*time.Second)
	b.run("open the detail", chromedp.Click(`#events-table tr[data-id="1500"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#event-verified[data-state="verified"]`, chromedp.ByQuery))
	for _, c := range []struct{ class, text string }{{"subject", longSubject}, {"type", longType}} {
		var cell cellState
		b.eval(cellJS+`('#events-table tr[data-id="1500"] td.`+c.class+`')`, &cell)
		if cell.Text != c.text || cell.Cut || !cell.Fits || cell.TextOverflow == "ellipsis" || cell.WhiteSpace == "nowrap" {
			t.Errorf("the %s beside the detail: %+v, want %q whole, wrapped", c.class, cell, c.text)
		}
	}
	b.screenshot("fit-events-detail")
	b.key("Escape")

	// The subject tree: /customers' children by number, and the count
	// of subjects shown of all (/, /customers, its children, and the
	// long subject's ancestors below /customers/760).
	total := 2 + fitCustomers + strings.Count(strings.TrimPrefix(longSubject, "/customers/760"), "/")
	b.eval(`location.hash = "#/subjects"`, nil)
	b.waitFor("tree", `document.querySelector('#subject-tree [data-subject="/customers"]')`, 10*time.Second)
	b.run("open /customers", chromedp.Click(`#subject-tree [data-subject="/customers"] .twisty`, chromedp.ByQuery))
	b.waitFor("/customers open", `document.querySelector('#subject-tree [data-subject="/customers/0"]') && document.querySelector("#subjects-cancel").disabled`, 10*time.Second)
	shown := 2 + fitCustomers
	want := fmt.Sprintf("%s of %s shown", formatCount(shown), formatCount(total))
	b.waitFor("the count", `document.querySelector("#subjects-count").textContent === `+strconv.Quote(want), 10*time.Second)
	var order []string
	for _, at := range []int{0, 140, 1436} {
		b.eval(`(() => { const tree = document.querySelector("#subject-tree"); tree.scrollTop = `+strconv.Itoa(at+2)+` * document.querySelector('#subject-tree [role="treeitem"]').getBoundingClientRect().height; return true; })()`, nil)
		b.waitFor("rows at "+strconv.Itoa(at), `document.querySelector('#subject-tree [data-subject="/customers/`+strconv.Itoa(at+4)+`"]')`, 5*time.Second)
		var names []string
		b.eval(`[...document.querySelectorAll('#subject-tree [data-subject^="/customers/"][aria-level="3"]')].sort((a, b) => a.getAttribute("aria-posinset") - b.getAttribute("aria-posinset")).map((n) => n.getAttribute("aria-posinset") + ":" + n.dataset.subject.slice(11))`, &names)
		order = append(order, names...)
	}
	for _, entry := range order {
		pos, name, _ := strings.Cut(entry, ":")
		if n, _ := strconv.Atoi(pos); strconv.Itoa(n-1) != name {
			t.Errorf("/customers' child at position %s is %s, want %d (in numeric order)", pos, name, n-1)
			break
		}
	}
	if !strings.Contains(strings.Join(order, " "), "145:144") || !strings.Contains(strings.Join(order, " "), "1440:1439 1441:1440") {
		t.Errorf("children around 144 and 1439 not seen: %v", order)
	}
	b.screenshot("fit-subjects")
	// The order itself: runs of digits by value, the rest by code unit.
	var natural []string
	b.await(`import("/views/subject-tree.js").then(({ naturalCompare }) => [
  ["144", "1439"], ["1439", "1440"], ["9", "10"], ["a2", "a10"], ["order-9", "order-10"], ["1.9", "1.10"],
  ["v2b", "v10a"], ["7", "007"], ["10", "x"], ["B", "a"], ["a", "a1"], ["99999999999999999999", "100000000000000000000"],
].filter(([a, b]) => !(naturalCompare(a, b) < 0 && naturalCompare(b, a) > 0)).map(([a, b]) => a + " < " + b))`, &natural)
	if len(natural) > 0 {
		t.Errorf("natural order: not so %v", natural)
	}

	// The query grid: its last column heading whole and clear of the
	// grid's scrollbar, scrolled to the right end of a wide result and in
	// a narrow one.
	for _, q := range []string{"FROM e IN events PROJECT INTO e", "FROM e IN events PROJECT INTO { id: e.id, type: e.type }"} {
		b.eval(`location.hash = "#/query"`, nil)
		b.waitFor("query view", `!document.querySelector("#view-query").hidden`, 5*time.Second)
		columns := queryColumns(b, q)
		var last struct {
			Text                string
			Right, Clear, Inner float64
			Cut                 bool
		}
		b.eval(`(() => {
  const grid = document.querySelector("#query-table");
  grid.scrollLeft = grid.scrollWidth;
  const heads = grid.querySelectorAll('#query-head [role="columnheader"]');
  const head = heads[heads.length - 1];
  const g = grid.getBoundingClientRect();
  const inner = g.left + grid.clientLeft + grid.clientWidth;
  return { Text: head.textContent, Right: head.getBoundingClientRect().right, Inner: inner, Clear: inner - head.getBoundingClientRect().right, Cut: head.scrollWidth > head.clientWidth };
})()`, &last)
		if last.Text != columns[len(columns)-1] || last.Cut || last.Clear < 16 {
			t.Errorf("%s: the last heading %q ends at x %.1f, %.1f px before the grid's inner edge (%.1f), cut %v; want it whole, 16 px or more clear", q, last.Text, last.Right, last.Clear, last.Inner, last.Cut)
		}
	}
	b.screenshot("fit-query-last-column")

	b.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	checkRate("at 390 px")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
