package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// focusedJS names the focused element: #id, a data attribute, or its tag.
const focusedJS = `(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return "body";
  if (e.id) return "#" + e.id;
  if (e.dataset.subject) return "subject:" + e.dataset.subject;
  if (e.dataset.id) return "event:" + e.dataset.id;
  if (e.dataset.type) return "type:" + e.dataset.type;
  if (e.getAttribute("aria-rowindex")) return "row:" + e.getAttribute("aria-rowindex");
  if (e.getAttribute("href")) return "link:" + e.getAttribute("href");
  return e.tagName;
})()`

// focused returns the name of the focused element (see focusedJS).
func (b *browser) focused() string {
	b.t.Helper()
	var s string
	b.eval(focusedJS, &s)
	return s
}

// tab presses Tab (Shift+Tab with back) and returns the newly focused element.
func (b *browser) tab(back bool) string {
	b.t.Helper()
	if back {
		b.key(kb.Tab, chromedp.KeyModifiers(input.ModifierShift))
	} else {
		b.key(kb.Tab)
	}
	return b.focused()
}

// tabs presses Tab n times and returns the elements focused in turn.
func (b *browser) tabs(n int) []string {
	b.t.Helper()
	var seen []string
	for range n {
		seen = append(seen, b.tab(false))
	}
	return seen
}

// tabTo presses Tab (or Shift+Tab) until want is focused, at most 30 times.
func (b *browser) tabTo(want string, back bool) {
	b.t.Helper()
	var seen []string
	for range 30 {
		got := b.tab(back)
		if got == want {
			return
		}
		seen = append(seen, got)
	}
	b.t.Fatalf("%s not reached by keyboard; focus went %v", want, seen)
}

// waitFocus waits until want is focused.
func (b *browser) waitFocus(want string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := b.focused()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("focus on %s, want %s", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goByKeyboard reaches the nav link of view with Shift+Tab from the
// current heading, follows it with Enter, and checks that the focus lands
// on the view's heading.
func (b *browser) goByKeyboard(view string) {
	b.t.Helper()
	b.tabTo("link:#/"+view, true)
	b.key(kb.Enter)
	b.waitFocus("#h-" + view)
}

// signInByKeyboard opens the UI, types the token into the focused field,
// presses Enter and checks that the focus lands on the dashboard's heading.
func (b *browser) signInByKeyboard(inst *harness.Instance) {
	b.t.Helper()
	b.run("login page", chromedp.Navigate(inst.URL("http")+"/"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	b.waitFocus("#token")
	b.run("type the token", chromedp.KeyEvent(harness.Token), chromedp.KeyEvent(kb.Enter))
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	b.waitFocus("#h-dashboard")
}

// indexOf returns the position of s in list, or -1.
func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// TestUIKeyboard uses every view with the keyboard only: focus lands on
// the heading after sign-in and after each view change, a table or list is
// one tab stop that arrows move through, and every control is reachable.
func TestUIKeyboard(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	var pairs []string
	for range 120 {
		pairs = append(pairs, "/books/42", lib+"book-borrowed")
	}
	mustWrite(t, inst, candidates(pairs...))
	mustWrite(t, inst, candidates("/books/7", lib+"book-acquired", "/readers/jane", lib+"reader-registered"))
	b := newBrowser(t, 1280, 900)
	b.signInByKeyboard(inst)

	// Events: the table is one tab stop; arrows move; Enter opens the
	// detail with the focus in it; Escape closes it and returns to the row.
	b.goByKeyboard("events")
	b.waitFor("first page", `document.querySelector('#events-table tr[data-id="49"]')`, 10*time.Second)
	stops := b.tabs(11)
	for _, want := range []string{"#events-subject", "#events-recursive", "#events-order", "#events-load", "#events-id", "#events-id-go", "#events-time", "#events-time-go", "event:0", "#events-next"} {
		if indexOf(stops, want) < 0 {
			t.Errorf("events: %s not among the tab stops %v", want, stops)
		}
	}
	if at := indexOf(stops, "event:0"); at < 0 || stops[at+1] != "#events-next" {
		t.Fatalf("events: the table is not one tab stop: %v", stops)
	}
	b.tabTo("event:0", true)
	b.key(kb.ArrowDown)
	b.waitFocus("event:1")
	b.key(kb.End)
	b.waitFocus("event:49")
	b.key(kb.Enter)
	b.waitFocus("#event-detail")
	b.run("verified", chromedp.WaitVisible(`#event-verified[data-state="verified"]`, chromedp.ByQuery))
	if got := b.tab(false); got != "#event-close" {
		t.Errorf("Tab in the detail went to %s", got)
	}
	b.key(kb.Escape)
	b.waitFocus("event:49")
	var hidden bool
	b.eval(`document.querySelector("#event-detail").hidden`, &hidden)
	if !hidden {
		t.Errorf("Escape left the detail open")
	}
	b.tabTo("#events-next", false)
	b.key(kb.Enter)
	b.waitFor("second page", `document.querySelector("#events-table tbody tr").dataset.id === "50"`, 10*time.Second)
	b.tabTo("#events-previous", true)
	b.key(kb.Enter)
	b.waitFor("first page again", `document.querySelector("#events-table tbody tr").dataset.id === "0"`, 10*time.Second)
	b.tabTo("#events-id", true)
	b.run("type an id", chromedp.KeyEvent("100"), chromedp.KeyEvent(kb.Enter))
	b.waitFor("page at 100", `document.querySelector("#events-table tbody tr").dataset.id === "100"`, 10*time.Second)
	b.screenshot("keyboard-events")

	// Subjects: a tree; Right opens a node or enters it, Left closes it or
	// goes to the parent, Enter follows the link.
	b.goByKeyboard("subjects")
	b.waitFor("tree", `document.querySelector('#subject-tree [data-subject="/books"]')`, 10*time.Second)
	b.tabTo("subject:/", false)
	if got := b.tab(false); strings.HasPrefix(got, "subject:") {
		t.Errorf("subjects: the tree is more than one tab stop (Tab went to %s)", got)
	}
	b.tabTo("subject:/", true)
	b.key(kb.ArrowDown)
	b.waitFocus("subject:/books")
	if b.attr(":focus", "aria-expanded") != "false" {
		t.Errorf("/books: aria-expanded %q", b.attr(":focus", "aria-expanded"))
	}
	b.key(kb.ArrowRight)
	b.waitFor("/books open", `document.activeElement.getAttribute("aria-expanded") === "true"`, 10*time.Second)
	b.key(kb.ArrowRight) // the first child: siblings in natural order, 7 before 42
	b.waitFocus("subject:/books/7")
	b.key(kb.ArrowLeft)
	b.waitFocus("subject:/books")
	b.key(kb.ArrowLeft)
	b.waitFor("/books closed", `document.activeElement.getAttribute("aria-expanded") === "false" && !document.querySelector('[data-subject="/books/42"]')`, 5*time.Second)
	b.key(kb.ArrowRight)
	b.waitFor("/books open again", `document.querySelector('[data-subject="/books/7"]')`, 5*time.Second)
	b.key(kb.ArrowDown)
	b.key(kb.ArrowDown)
	b.waitFocus("subject:/books/42")
	b.key(kb.ArrowUp)
	b.waitFocus("subject:/books/7")
	b.screenshot("keyboard-subjects")
	b.key(kb.Enter)
	b.waitFocus("#h-events")
	b.waitFor("events of /books/7", `document.querySelector("#events-subject").value === "/books/7" && document.querySelectorAll("#events-table tr[data-id]").length === 1`, 10*time.Second)

	// Live tail: start, pause, stop.
	b.goByKeyboard("live")
	b.tabTo("#live-start", false)
	b.key(kb.Enter)
	b.waitFor("connected", `document.querySelector("#live-status").dataset.state === "connected"`, 10*time.Second)
	b.tabTo("#live-pause", false)
	b.key(kb.Enter)
	if b.attr("#live-pause", "aria-pressed") != "true" {
		t.Errorf("Pause by keyboard did not pause")
	}
	b.tabTo("#live-stop", false)
	b.key(kb.Enter)
	b.waitFor("stopped", `document.querySelector("#live-status").dataset.state === "stopped"`, 5*time.Second)

	// Query: Ctrl+Enter runs; the grid is one tab stop with row navigation.
	b.goByKeyboard("query")
	b.tabTo("#query-text", false)
	b.run("type a query", chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(input.ModifierCtrl)), chromedp.Evaluate(`document.querySelector("#query-text").value = ""`, nil),
		chromedp.KeyEvent(`FROM e IN events WHERE e.subject == "/books/42" PROJECT INTO { id: e.id, type: e.type }`),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(input.ModifierCtrl)))
	b.waitFor("query done", `document.querySelector("#view-query").dataset.state === "done"`, 10*time.Second)
	b.tabTo("row:2", false)
	b.key(kb.ArrowDown)
	b.waitFocus("row:3")
	b.key(kb.End)
	b.waitFocus("row:121")
	if got := b.tab(false); strings.HasPrefix(got, "row:") {
		t.Errorf("query: the grid is more than one tab stop (Tab went to %s)", got)
	}
	b.tabTo("#query-as-json", true)
	b.key(kb.Enter)
	if b.attr("#query-as-json", "aria-pressed") != "true" {
		t.Errorf("JSON view not chosen by keyboard")
	}
	b.screenshot("keyboard-query")

	// Event types: the table is one tab stop; Enter shows the schema.
	b.goByKeyboard("types")
	b.waitFor("types", `document.querySelector('#types-table tr[data-type]')`, 10*time.Second)
	b.tabTo("type:"+lib+"book-acquired", false)
	b.key(kb.ArrowDown)
	b.waitFocus("type:" + lib + "book-borrowed")
	b.key(kb.Enter)
	if got := b.text("#type-schema-name"); got != lib+"book-borrowed" {
		t.Errorf("schema shown for %q", got)
	}
	if got := b.tab(false); strings.HasPrefix(got, "type:") {
		t.Errorf("types: the table is more than one tab stop (Tab went to %s)", got)
	}
	b.goByKeyboard("dashboard")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
