package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestUIErase drives the erasure of the Operations view against a real
// service with an access file: the dialog erases nothing until the subject
// is typed again exactly, the answer says how many events were erased and
// which event records it, the events read back erased, and the event
// detail shows an erased event as erased (not as a hash mismatch, nor as
// empty data). A token without the admin grant finds the controls
// disabled, with the reason.
func TestUIErase(t *testing.T) {
	file := accessFileOf(t, [2]string{"admin", "{admin: true}"}, [2]string{"operator", `{operate: true, read: ["/"]}`})
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--with-ui", "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
	admin := accessToken("admin")
	marker := letterMarker()
	body := fmt.Sprintf(`{"events":[`+
		`{"source":"https://shop.example","subject":"/customers/42","type":"io.example.registered","data":{"email":"%s@example.com"}},`+
		`{"source":"https://shop.example","subject":"/customers/7","type":"io.example.registered","data":{"email":"kept@example.com"}},`+
		`{"source":"https://shop.example","subject":"/customers/42","type":"io.example.moved","data":{"street":"%s street 1"}}]}`, marker, marker)
	if r := inst.Do("POST", "/api/v1/write-events", admin, body); r.StatusCode != 200 {
		t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
	}

	b := newBrowser(t, 1280, 900)
	b.signIn(inst, admin)
	b.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	b.eval(`location.hash = "#/operations"`, nil)
	b.waitFocus("#h-operations")
	b.run("fill the erasure",
		chromedp.SetValue("#erase-subject", "/customers/42", chromedp.ByQuery),
		chromedp.SetValue("#erase-reason", "request of the customer", chromedp.ByQuery),
		chromedp.Click("#erase-open", chromedp.ByQuery),
		chromedp.WaitVisible("#erase-dialog", chromedp.ByQuery))
	b.waitFocus("#erase-confirm-subject")
	b.run("type the subject short of one character", chromedp.SendKeys("#erase-confirm-subject", "/customers/4", chromedp.ByQuery))
	var disabled bool
	if b.eval(`document.querySelector("#erase-confirm").disabled`, &disabled); !disabled {
		t.Fatal("the erasure may be confirmed before the subject is typed whole")
	}
	// Cancel erases nothing.
	b.run("cancel", chromedp.Click("#erase-cancel", chromedp.ByQuery))
	b.waitFor("the dialog closed", `!document.querySelector("#erase-dialog").open`, 5*time.Second)
	all := func() string {
		return string(inst.Do("POST", "/api/v1/read-events", admin, `{"subject":"/","options":{"recursive":true}}`).Body)
	}
	if got := all(); !strings.Contains(got, marker) {
		t.Fatal("a cancelled erasure erased")
	}

	b.run("open again", chromedp.Click("#erase-open", chromedp.ByQuery), chromedp.WaitVisible("#erase-dialog", chromedp.ByQuery))
	b.run("type the subject", chromedp.SendKeys("#erase-confirm-subject", "/customers/42", chromedp.ByQuery))
	b.waitFor("the confirm button enabled", `!document.querySelector("#erase-confirm").disabled`, 5*time.Second)
	b.run("confirm", chromedp.Click("#erase-confirm", chromedp.ByQuery))
	b.waitFor("the erasure done", `document.querySelector("#erase").dataset.state === "done"`, 20*time.Second)
	if got := b.text("#erase-status"); got != "Erased 2 events of /customers/42; event 3 records the erasure." {
		t.Errorf("the erasure's status: %q", got)
	}
	b.screenshot("erase")
	got := all()
	if strings.Contains(got, marker) || strings.Count(got, `"data":{"$erased":{"at":"`) != 2 || !strings.Contains(got, "kept@example.com") {
		t.Fatalf("the events after the erasure in the page:\n%s", got)
	}

	// The detail of an erased event says so.
	b.eval(`location.hash = "#/events?subject=/customers/42"`, nil)
	b.waitFor("the events", `document.querySelector('#events-table tr[data-id="0"]')`, 10*time.Second)
	b.run("open the erased event",
		chromedp.Click(`#events-table tr[data-id="0"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#event-verified[data-state="erased"]`, chromedp.ByQuery))
	if badge, pretty := b.text("#event-verified"), b.text("#event-pretty"); !strings.Contains(badge, "Erased at ") || !strings.Contains(badge, "by event 3") ||
		!strings.Contains(pretty, `"$erased"`) {
		t.Errorf("the erased event's detail: badge %q, data %s", badge, pretty)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}

	// Without the admin grant: disabled, with the reason.
	other := newBrowser(t, 1280, 900)
	other.signIn(inst, accessToken("operator"))
	other.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	other.eval(`location.hash = "#/operations"`, nil)
	other.waitFocus("#h-operations")
	var denied struct {
		Disabled bool   `json:"disabled"`
		Note     string `json:"note"`
	}
	other.eval(`({disabled: document.querySelector("#erase-open").disabled, note: document.querySelector("#erase-denied").textContent})`, &denied)
	if !denied.Disabled || denied.Note != "Erasing needs a token with the admin grant." {
		t.Errorf("without the admin grant: %+v", denied)
	}
}
