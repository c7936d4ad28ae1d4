package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// dataIndexRow is the selector of a data index's row in the Event types view.
func dataIndexRow(name string) string {
	return `#data-indexes-list [data-name="` + name + `"]`
}

// dataIndexesOf reads the data indexes of inst with token, by name.
func dataIndexesOf(t *testing.T, inst *harness.Instance, token string) map[string]dataIndexLine {
	t.Helper()
	out := map[string]dataIndexLine{}
	for _, l := range streamLines(t, inst.Do("POST", "/api/v1/read-data-indexes", token, `{}`), "read-data-indexes") {
		var x dataIndexLine
		if l.Type != "dataIndex" || json.Unmarshal(l.Payload, &x) != nil {
			t.Fatalf("read-data-indexes line %s %s", l.Type, l.Payload)
		}
		out[x.Name] = x
	}
	return out
}

// registerDataIndexInPage fills the register form and submits it.
func registerDataIndexInPage(b *browser, name, path, types string) {
	b.t.Helper()
	// chromedp.SetValue cannot set an empty value.
	fill := fmt.Sprintf(`(document.querySelector("#data-index-name").value = %q, document.querySelector("#data-index-path").value = %q, document.querySelector("#data-index-types").value = %q, true)`,
		name, path, types)
	b.run("register "+name, chromedp.Evaluate(fill, nil), chromedp.Click("#data-index-submit", chromedp.ByQuery))
}

// checkDataIndexRow checks that the row of x shows what read-data-indexes
// answered for it.
func checkDataIndexRow(t *testing.T, b *browser, x dataIndexLine) {
	t.Helper()
	sel := dataIndexRow(x.Name)
	var row struct {
		Cells         map[string]string `json:"cells"`
		State         string            `json:"state"`
		IndexedEvents string            `json:"indexedEvents"`
		Events        string            `json:"events"`
	}
	b.waitFor("row "+x.Name, `document.querySelector(`+strconv.Quote(sel)+`)`, 10*time.Second)
	b.eval(`((row) => {
  const cells = {};
  for (const cell of row.cells) if (cell.dataset.label) cells[cell.dataset.label] = cell.textContent;
  return { cells, state: row.dataset.state, indexedEvents: row.dataset.indexedEvents, events: row.dataset.events };
})(document.querySelector(`+strconv.Quote(sel)+`))`, &row)
	types := "all"
	if len(x.EventTypes) > 0 {
		types = strings.Join(x.EventTypes, ", ")
	}
	counts := fmt.Sprintf("%d of %d events", x.IndexedEvents, x.Events)
	if row.State != x.State || row.IndexedEvents != strconv.FormatUint(x.IndexedEvents, 10) || row.Events != strconv.FormatUint(x.Events, 10) ||
		row.Cells["Name"] != x.Name || row.Cells["Path"] != x.Path || row.Cells["Event types"] != types ||
		row.Cells["State"] != x.State || !strings.HasPrefix(row.Cells["Progress"], counts) {
		t.Errorf("%s: the row shows %+v; read-data-indexes answered %+v (want types %q, progress %q)", x.Name, row, x, types, counts)
	}
}

// TestUIDataIndexes drives the data indexes of the Event types view
// against a real service with an access file: an index registered through
// the form (its event type taken from a type's row) is listed with the
// state and counts read-data-indexes answers, as is one on all types; an
// invalid path and a second registration of a name with another path show
// the server's errors; a removal asks first, Cancel keeps the index and
// confirming removes it. A token without "schemas" sees the list but no
// register or remove controls; one with neither "read" nor "query" does
// not see the section.
func TestUIDataIndexes(t *testing.T) {
	file := accessFileOf(t, [2]string{"admin", "{admin: true}"}, [2]string{"reader", `{read: ["/"], query: true}`}, [2]string{"schemer", "{schemas: true}"})
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--with-ui", "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
	admin := accessToken("admin")
	body := `{"events":[` +
		`{"source":"https://library.example.com","subject":"/books/1","type":"io.example.borrowed","data":{"readerId":"/readers/1"}},` +
		`{"source":"https://library.example.com","subject":"/books/2","type":"io.example.borrowed","data":{"readerId":"/readers/2"}},` +
		`{"source":"https://library.example.com","subject":"/books/1","type":"io.example.returned","data":{"readerId":"/readers/1"}},` +
		`{"source":"https://library.example.com","subject":"/books/3","type":"io.example.borrowed","data":{"readerId":"/readers/1"}}]}`
	if r := inst.Do("POST", "/api/v1/write-events", admin, body); r.StatusCode != 200 {
		t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
	}

	b := newBrowser(t, 1280, 900)
	b.signIn(inst, admin)
	b.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	b.eval(`location.hash = "#/types"`, nil)
	b.waitFor("no data indexes", `document.querySelector("#data-indexes").dataset.state === "ready" && !document.querySelector("#data-indexes-empty").hidden`, 10*time.Second)

	// A type's row opens the form with its type; the index registered is
	// listed as read-data-indexes has it, once ready.
	b.run("index a type", chromedp.WaitVisible(`#types-table tr[data-type="io.example.borrowed"]`, chromedp.ByQuery),
		chromedp.Click(`#types-table tr[data-type="io.example.borrowed"] button[data-action="index"]`, chromedp.ByQuery))
	b.waitFocus("#data-index-name")
	var prefilled string
	if b.eval(`document.querySelector("#data-index-types").value`, &prefilled); prefilled != "io.example.borrowed" {
		t.Errorf("the form opened from io.example.borrowed has the event types %q", prefilled)
	}
	registerDataIndexInPage(b, "byReader", "/readerId", prefilled)
	b.waitFor("byReader ready", `document.querySelector('`+dataIndexRow("byReader")+`[data-state="ready"]')`, 20*time.Second)
	if got := b.text("#data-index-result"); !strings.Contains(got, "Data index byReader on /readerId registered") {
		t.Errorf("after the registration: %q", got)
	}
	api := dataIndexesOf(t, inst, admin)
	if x := api["byReader"]; x.State != "ready" || x.IndexedEvents != 4 || x.Events != 4 || len(x.EventTypes) != 1 || x.EventTypes[0] != "io.example.borrowed" {
		t.Fatalf("read-data-indexes after the registration in the page: %+v", api)
	}
	checkDataIndexRow(t, b, api["byReader"])

	// One on all types: "all".
	registerDataIndexInPage(b, "anyReader", "/readerId", "")
	b.waitFor("anyReader ready", `document.querySelector('`+dataIndexRow("anyReader")+`[data-state="ready"]')`, 20*time.Second)
	api = dataIndexesOf(t, inst, admin)
	checkDataIndexRow(t, b, api["anyReader"])
	checkDataIndexRow(t, b, api["byReader"])
	if got := b.attr("#data-indexes-count", "data-value"); got != "2" {
		t.Errorf("the count says %q indexes, want 2", got)
	}
	b.screenshot("dataindexes")

	// The server's errors, as it words them; nothing is listed for them.
	registerDataIndexInPage(b, "bad", "readerId", "")
	b.waitFor("the invalid path refused", `!document.querySelector("#data-index-error").hidden`, 10*time.Second)
	if got := b.text("#data-index-error"); got != "invalid data index: invalid path 'readerId'" {
		t.Errorf("an invalid path shows %q", got)
	}
	registerDataIndexInPage(b, "byReader", "/other", "io.example.borrowed")
	b.waitFor("the duplicate refused", `document.querySelector("#data-index-error").textContent.includes("already exists")`, 10*time.Second)
	if got := b.text("#data-index-error"); got != "state conflict: data index 'byReader' already exists" {
		t.Errorf("a second byReader shows %q", got)
	}
	if api = dataIndexesOf(t, inst, admin); len(api) != 2 || api["byReader"].Path != "/readerId" {
		t.Errorf("read-data-indexes after the refused registrations: %+v", api)
	}
	var rows int
	if b.eval(`document.querySelectorAll("#data-indexes-list tbody tr").length`, &rows); rows != 2 {
		t.Errorf("%d rows after the refused registrations, want 2", rows)
	}
	b.eval(`document.querySelector("#data-index-error").scrollIntoView({ block: "center" }), true`, nil)
	b.screenshot("dataindexes-error")

	// Remove asks first: Cancel keeps the index, confirming removes it.
	remove := dataIndexRow("byReader") + ` button[data-action="remove"]`
	b.run("remove byReader", chromedp.Click(remove, chromedp.ByQuery), chromedp.WaitVisible("#data-index-dialog", chromedp.ByQuery))
	if got := b.text("#data-index-dialog"); !strings.Contains(got, "Remove data index byReader?") {
		t.Errorf("the dialog says %q", got)
	}
	b.waitFocus("#data-index-cancel")
	b.screenshot("dataindexes-dialog")
	b.run("cancel", chromedp.Click("#data-index-cancel", chromedp.ByQuery), chromedp.WaitNotVisible("#data-index-dialog", chromedp.ByQuery))
	time.Sleep(300 * time.Millisecond)
	if _, ok := dataIndexesOf(t, inst, admin)["byReader"]; !ok {
		t.Fatalf("Cancel removed byReader")
	}
	b.run("remove byReader", chromedp.Click(remove, chromedp.ByQuery), chromedp.WaitVisible("#data-index-dialog", chromedp.ByQuery),
		chromedp.Click("#data-index-confirm", chromedp.ByQuery))
	b.waitFor("byReader gone", `!document.querySelector('`+dataIndexRow("byReader")+`') && !document.querySelector("#data-indexes-done").hidden`, 10*time.Second)
	if got := b.text("#data-indexes-done"); got != "The data index byReader was removed." {
		t.Errorf("after the removal: %q", got)
	}
	if api = dataIndexesOf(t, inst, admin); len(api) != 1 || api["anyReader"].Name == "" {
		t.Errorf("read-data-indexes after the removal: %+v", api)
	}
	b.waitFocus("#h-data-indexes")

	// A token with read and query but not schemas: the list, no controls.
	b.run("log out", chromedp.Click("#logout", chromedp.ByQuery), chromedp.WaitVisible("#login", chromedp.ByQuery))
	b.signIn(inst, accessToken("reader"))
	b.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	b.eval(`location.hash = "#/types"`, nil)
	b.waitFor("the reader's list", `document.querySelector('`+dataIndexRow("anyReader")+`')`, 10*time.Second)
	checkDataIndexRow(t, b, dataIndexesOf(t, inst, admin)["anyReader"])
	b.run("types listed", chromedp.WaitVisible(`#types-table tr[data-type="io.example.borrowed"]`, chromedp.ByQuery))
	var controls struct {
		Form, Denied  bool
		Remove, Index int
	}
	b.eval(`({
  form: !document.querySelector("#data-index-form").hidden,
  denied: !document.querySelector("#data-indexes-denied").hidden,
  remove: document.querySelectorAll('#data-indexes-list button[data-action="remove"]').length,
  index: document.querySelectorAll('#types-table button[data-action="index"]').length,
})`, &controls)
	if controls.Form || controls.Remove != 0 || controls.Index != 0 || !controls.Denied {
		t.Errorf("reader (no schemas): register form shown %v, %d remove and %d index buttons, why said %v", controls.Form, controls.Remove, controls.Index, controls.Denied)
	}
	if got := b.text("#data-indexes-denied"); !strings.Contains(got, "“schemas” grant") {
		t.Errorf("reader: the note says %q", got)
	}
	b.eval(`document.querySelector("#data-indexes").scrollIntoView(), true`, nil)
	b.screenshot("dataindexes-reader")

	// A token with schemas only may use the view, but may not read the
	// data indexes: no section.
	b.run("log out", chromedp.Click("#logout", chromedp.ByQuery), chromedp.WaitVisible("#login", chromedp.ByQuery))
	b.signIn(inst, accessToken("schemer"))
	b.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	b.eval(`location.hash = "#/types"`, nil)
	b.waitFocus("#h-types")
	var shown bool
	if b.eval(`!document.querySelector("#data-indexes").hidden`, &shown); shown {
		t.Errorf("schemer (neither read nor query): the data indexes are shown")
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
