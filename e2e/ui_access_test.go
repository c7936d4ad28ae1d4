package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestUIAccess signs in to the console with tokens of an access file: it
// offers only the views and actions a token's grants allow and names the
// others with the grant each needs, starts from a subject the token may
// read, follows a reload of the file that changes the grants, says when a
// token has expired, and shows nothing of one token's data to the next.
func TestUIAccess(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.yaml")
	brief := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339)
	publish := func(reader string) { // written whole, then renamed over the file
		t.Helper()
		var b strings.Builder
		b.WriteString("tokens:\n")
		for _, tok := range [][3]string{{"reader", reader, ""}, {"admin", "{admin: true}", ""}, {"brief", `{read: ["/"]}`, brief}} {
			d := sha256.Sum256([]byte(accessToken(tok[0])))
			fmt.Fprintf(&b, "  - name: %s\n    sha256: %s\n    grants: %s\n", tok[0], hex.EncodeToString(d[:]), tok[1])
			if tok[2] != "" {
				fmt.Fprintf(&b, "    expires: %s\n", tok[2])
			}
		}
		harness.WriteFile(t, filepath.Dir(file), "next.yaml", b.String())
		if err := os.Rename(filepath.Join(filepath.Dir(file), "next.yaml"), file); err != nil {
			t.Fatal(err)
		}
	}
	publish(`{read: ["/orders"], write: ["/orders"]}`)
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--with-ui", "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
	admin := accessToken("admin")
	body := `{"events":[` +
		`{"source":"https://e2e.example","subject":"/orders/1","type":"io.example.placed","data":{}},` +
		`{"source":"https://e2e.example","subject":"/invoices/1","type":"io.example.invoiced","data":{}},` +
		`{"source":"https://e2e.example","subject":"/orders/2","type":"io.example.placed","data":{}}]}`
	if r := inst.Do("POST", "/api/v1/write-events", admin, body); r.StatusCode != 200 {
		t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
	}

	b := newBrowser(t, 1280, 900)

	// A token that expires while signed in is sent back to the sign-in,
	// which says so (the sampler asks for the health every 2 s).
	b.signIn(inst, accessToken("brief"))
	b.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	if got := b.text("#access-expires"); !strings.Contains(got, "expires at") {
		t.Errorf("brief: access line %q names no expiry", got)
	}
	b.waitFor("the expiry said", `document.querySelector("#login-error").textContent.includes("expired")`, 20*time.Second)

	// The reader: the views of read, nothing else, and why.
	b.signIn(inst, accessToken("reader"))
	b.run("signed in", chromedp.WaitVisible("#app", chromedp.ByQuery))
	checkOffered(t, b, "reader", "Dashboard", "Subjects", "Events", "Live tail", "Event types")
	if got := b.text("#whoami-name"); got != "reader" {
		t.Errorf("reader: signed in as %q", got)
	}
	access := b.text("#access")
	for _, want := range []string{"read /orders; write /orders", "Query (needs “query”)", "Subscriptions (needs “operate”)", "Operations (needs “operate”)"} {
		if !strings.Contains(access, want) {
			t.Errorf("reader: the access line %q does not say %q", access, want)
		}
	}
	b.screenshot("access-reader")

	b.run("events", chromedp.Navigate(inst.URL("http")+"/#/events"))
	b.waitFor("the reader's events", `document.querySelectorAll("#events-table tbody tr").length === 2`, 10*time.Second)
	var subjects []string
	b.eval(`[...document.querySelectorAll("#events-table tbody tr td:nth-child(3)")].map((td) => td.textContent)`, &subjects)
	if !slices.Equal(subjects, []string{"/orders/1", "/orders/2"}) {
		t.Errorf("reader: events of %v, want /orders/1 and /orders/2", subjects)
	}
	var start string
	b.eval(`document.querySelector("#events-subject").value`, &start)
	if start != "/orders" {
		t.Errorf("reader: the events view starts from %q, want /orders", start)
	}
	var timeDisabled bool
	b.eval(`document.querySelector("#events-time-go").disabled && document.querySelector("#events-time").disabled`, &timeDisabled)
	if why := b.text("#events-goto-time-denied"); !timeDisabled || !strings.Contains(why, "“read” grant of /") {
		t.Errorf("reader: go to time disabled %v, said %q", timeDisabled, why)
	}

	b.run("operations", chromedp.Navigate(inst.URL("http")+"/#/operations"), chromedp.WaitVisible("#view-denied", chromedp.ByQuery))
	if got := b.text("#denied-text"); !strings.Contains(got, "“reader” may not use Operations: it needs the “operate” grant") {
		t.Errorf("reader: operations say %q", got)
	}
	var shown bool
	b.eval(`!document.querySelector("#view-operations").hidden`, &shown)
	if shown {
		t.Errorf("reader: the operations view is shown")
	}
	b.screenshot("access-denied")

	b.run("types", chromedp.Navigate(inst.URL("http")+"/#/types"),
		chromedp.WaitVisible(`#types-table tr[data-type="io.example.placed"]`, chromedp.ByQuery))
	var registerDisabled bool
	b.eval(`document.querySelector("#register-submit").disabled && document.querySelector("#register-type").disabled`, &registerDisabled)
	if why := b.text("#register-denied"); !registerDisabled || !strings.Contains(why, "“schemas” and “query” grants") {
		t.Errorf("reader: register disabled %v, said %q", registerDisabled, why)
	}
	b.screenshot("access-types")

	b.run("subjects", chromedp.Navigate(inst.URL("http")+"/#/subjects"))
	b.waitFor("the reader's subjects", `document.querySelector('#subject-tree [data-subject="/orders"]')`, 10*time.Second)
	var listed []string
	b.eval(`[...document.querySelectorAll("#subject-tree [data-subject]")].map((n) => n.dataset.subject)`, &listed)
	for _, s := range listed {
		if strings.HasPrefix(s, "/invoices") {
			t.Errorf("reader: the subject tree shows %s (%v)", s, listed)
		}
	}

	// The file changes while the reader is signed in: read goes, query
	// comes. The next refused request has the console read the grants
	// again; the events view, no longer allowed, says why.
	b.run("events", chromedp.Navigate(inst.URL("http")+"/#/events"))
	b.waitFor("the reader's events", `document.querySelectorAll("#events-table tbody tr").length === 2`, 10*time.Second)
	publish(`{query: true}`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := inst.Do("POST", "/api/v1/read-access", accessToken("reader"), "")
		if strings.Contains(string(r.Body), `"query":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the access file was not reloaded: %s", r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.run("load again", chromedp.Click("#events-load", chromedp.ByQuery))
	b.waitFor("the events view refused", `!document.querySelector("#view-denied").hidden`, 10*time.Second)
	if got := b.text("#denied-text"); !strings.Contains(got, "may not use Events: it needs the “read” grant") {
		t.Errorf("reader after the reload: events say %q", got)
	}
	checkOffered(t, b, "reader after the reload", "Dashboard", "Query")
	if got := b.text("#access-grants"); got != "query" {
		t.Errorf("reader after the reload: grants %q, want query", got)
	}

	// The admin, in the same tab: everything, no access line, and the
	// subjects the reader could not see.
	b.run("log out", chromedp.Click("#logout", chromedp.ByQuery), chromedp.WaitVisible("#login", chromedp.ByQuery))
	b.run("sign in as admin",
		chromedp.SetValue("#token", admin, chromedp.ByQuery),
		chromedp.Click("#login-submit", chromedp.ByQuery))
	// Signing in again reloads the page: wait across the navigation.
	signedIn := false
	for deadline := time.Now().Add(10 * time.Second); !signedIn && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`document.querySelector("#whoami-name").textContent === "admin" && !document.querySelector("#app").hidden`, &signedIn))
	}
	if !signedIn {
		t.Fatalf("admin: not signed in within 10 s (console: %v)", b.consoleErrors())
	}
	checkOffered(t, b, "admin", "Dashboard", "Subjects", "Events", "Live tail", "Query", "Event types", "Subscriptions", "Operations")
	var accessHidden bool
	b.eval(`document.querySelector("#access").hidden`, &accessHidden)
	if !accessHidden {
		t.Errorf("admin: an access line is shown: %q", b.text("#access"))
	}
	b.run("subjects", chromedp.Navigate(inst.URL("http")+"/#/subjects"))
	b.waitFor("every subject", `document.querySelector('#subject-tree [data-subject="/invoices"]')`, 10*time.Second)

	// A phone: the access line and the menu of a restricted token fit.
	b.run("log out", chromedp.Click("#logout", chromedp.ByQuery), chromedp.WaitVisible("#login", chromedp.ByQuery))
	b.signIn(inst, accessToken("reader"))
	b.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.WaitVisible("#access", chromedp.ByQuery))
	var width int
	b.eval(`document.documentElement.scrollWidth`, &width)
	if width > 390 {
		t.Errorf("the console is %d px wide on a 390-px screen", width)
	}
	b.screenshot("access-phone")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// checkOffered checks that the menu holds exactly the views named.
func checkOffered(t *testing.T, b *browser, who string, views ...string) {
	t.Helper()
	var offered []string
	b.eval(`[...document.querySelectorAll("#nav-list li")].filter((li) => !li.hidden).map((li) => li.textContent.trim())`, &offered)
	if !slices.Equal(offered, views) {
		t.Errorf("%s: the menu offers %v, want %v", who, offered, views)
	}
}
