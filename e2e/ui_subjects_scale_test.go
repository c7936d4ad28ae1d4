package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// The store of TestUISubjectsScale: one event on each of 1,000,000
// subjects, /tenants/<t>/orders/<o> (three of them named needle-<t>, the
// rare term) and /flat/<n>, a node of many children.
const (
	millionTenants = 990
	millionOrders  = 1000
	millionFlat    = 10000
	millionBatch   = 10000
)

// Bounds of TestUISubjectsScale: generous, for a loaded 2-core machine;
// the figures it prints are the point (the 100-ms target of a page is
// BenchmarkSubjectTree's, in modules/store).
const (
	maxSubjectPage     = 3 * time.Second  // root, a node's first and next page, first matches (with the debounce)
	maxRareSearch      = 30 * time.Second // the whole search for the rare term
	maxSubjectsRequest = 2 * time.Second  // one request of the subject routes
)

// millionSubject returns the i-th subject of the store.
func millionSubject(i int) string {
	if i >= millionTenants*millionOrders {
		return fmt.Sprintf("/flat/%d", i-millionTenants*millionOrders)
	}
	t, o := i/millionOrders, i%millionOrders
	if o == 0 && t%400 == 7 {
		return fmt.Sprintf("/tenants/%d/orders/needle-%d", t, t)
	}
	return fmt.Sprintf("/tenants/%d/orders/%d", t, o)
}

// buildMillionSubjects writes the store in batches of millionBatch events
// from two writers.
func buildMillionSubjects(t *testing.T, inst *harness.Instance) {
	t.Helper()
	started := time.Now()
	total := millionTenants*millionOrders + millionFlat
	batches := make(chan int)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range batches {
				var body strings.Builder
				body.WriteString(`{"events":[`)
				for i := first; i < min(first+millionBatch, total); i++ {
					if i > first {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"source":"https://shop.example.com","subject":"%s","type":"com.example.shop.order-placed","data":{}}`, millionSubject(i))
				}
				body.WriteString(`]}`)
				if r := inst.Do("POST", "/api/v1/write-events", harness.Token, body.String()); r.StatusCode != 200 {
					errs <- fmt.Errorf("write-events: %d %.200s", r.StatusCode, r.Body)
					return
				}
			}
		}()
	}
	for first := 0; first < total; first += millionBatch {
		select {
		case batches <- first:
		case err := <-errs:
			close(batches)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(batches)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("store: %d events over %d subjects written in %s", total, total, time.Since(started).Round(time.Millisecond))
}

// firstMillionMatches returns the first n subjects under /tenants of the
// store of buildMillionSubjects that contain text, in the order of
// read-subjects: depth first, siblings by segment byte order.
func firstMillionMatches(text string, n int) []string {
	orders := map[string][]string{}
	for i := range millionTenants * millionOrders {
		s := millionSubject(i)
		tenant := strings.Split(s, "/")[2]
		orders[tenant] = append(orders[tenant], s)
	}
	tenants := slices.Sorted(maps.Keys(orders))
	var out []string
	for _, tenant := range tenants {
		slices.Sort(orders[tenant])
		for _, s := range append([]string{"/tenants/" + tenant, "/tenants/" + tenant + "/orders"}, orders[tenant]...) {
			if strings.Contains(s, text) {
				out = append(out, s)
				if len(out) == n {
					return out
				}
			}
		}
	}
	return out
}

type wireChild struct {
	Subject     string `json:"subject"`
	HasEvents   bool   `json:"hasEvents"`
	HasChildren bool   `json:"hasChildren"`
}

type childrenPage struct {
	Children []wireChild `json:"children"`
	Next     *string     `json:"next"`
}

type matchesPage struct {
	Subjects []string `json:"subjects"`
	Next     *string  `json:"next"`
}

// postSubjects sends a request to a subject route, decodes its answer into
// out and returns how long it took.
func postSubjects(t *testing.T, inst *harness.Instance, path string, body any, out any) time.Duration {
	t.Helper()
	raw, _ := json.Marshal(body)
	start := time.Now()
	r := inst.Do("POST", path, harness.Token, string(raw))
	took := time.Since(start)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s: %d %s %.200s", path, raw, r.StatusCode, r.Header.Get("Content-Type"), r.Body)
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		t.Fatalf("%s %s: %v", path, raw, err)
	}
	if took > maxSubjectsRequest {
		t.Errorf("%s %s took %s, bound %s", path, raw, took, maxSubjectsRequest)
	}
	return took
}

// searchAll pages through a search until it is complete; it returns the
// matches, the pages and the time it took.
func searchAll(t *testing.T, inst *harness.Instance, contains string) ([]string, int, time.Duration) {
	t.Helper()
	var all []string
	var took time.Duration
	body := map[string]any{"baseSubject": "/", "contains": contains, "limit": 1000}
	for pages := 1; ; pages++ {
		var page matchesPage
		took += postSubjects(t, inst, "/api/v1/search-subjects", body, &page)
		all = append(all, page.Subjects...)
		if page.Next == nil {
			return all, pages, took
		}
		body["after"] = *page.Next
	}
}

// TestUISubjectsScale is the subject tree and its filter against a store
// of 1,000,000 subjects: over HTTP, that read-subject-children and
// search-subjects answer the right pages quickly; in Chromium, the time
// from a user's action until its rows show, measured in the page: open
// the root, open a node of 10,000 children, read its next page, the first
// matches of a filter, the whole search for a rare term.
func TestUISubjectsScale(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	buildMillionSubjects(t, inst)

	// Over HTTP.
	var root childrenPage
	took := postSubjects(t, inst, "/api/v1/read-subject-children", map[string]any{"subject": "/"}, &root)
	if want := []wireChild{{"/flat", false, true}, {"/tenants", false, true}}; !slices.Equal(root.Children, want) || root.Next != nil {
		t.Errorf("children of /: %+v next %v, want %+v", root.Children, root.Next, want)
	}
	t.Logf("http: children of / in %s", took)
	flat := make([]string, millionFlat)
	for i := range flat {
		flat[i] = "/flat/" + strconv.Itoa(i)
	}
	sort.Strings(flat)
	var got []string
	var flatTook time.Duration
	body := map[string]any{"subject": "/flat", "limit": 1000}
	pages := 0
	for ; ; pages++ {
		var page childrenPage
		took := postSubjects(t, inst, "/api/v1/read-subject-children", body, &page)
		if pages == 0 {
			t.Logf("http: first 1,000 children of /flat in %s", took)
		}
		flatTook += took
		for _, c := range page.Children {
			if c.HasChildren || !c.HasEvents {
				t.Fatalf("child %+v of /flat", c)
			}
			got = append(got, c.Subject)
		}
		if page.Next == nil {
			break
		}
		if *page.Next != got[len(got)-1] {
			t.Fatalf("next %q after %q", *page.Next, got[len(got)-1])
		}
		body["after"] = *page.Next
	}
	if !slices.Equal(got, flat) {
		t.Errorf("children of /flat: %d in %d pages, want the %d in byte order", len(got), pages+1, len(flat))
	}
	t.Logf("http: all %d children of /flat in %d pages, %s", len(got), pages+1, flatTook)
	var tenant childrenPage
	postSubjects(t, inst, "/api/v1/read-subject-children", map[string]any{"subject": "/tenants/407/orders", "after": "/tenants/407/orders/998"}, &tenant)
	if want := []wireChild{{"/tenants/407/orders/999", true, false}, {"/tenants/407/orders/needle-407", true, false}}; !slices.Equal(tenant.Children, want) || tenant.Next != nil {
		t.Errorf("last children of /tenants/407/orders: %+v next %v, want %+v", tenant.Children, tenant.Next, want)
	}
	needles, needlePages, needleTook := searchAll(t, inst, "NEEDLE")
	if want := []string{"/tenants/407/orders/needle-407", "/tenants/7/orders/needle-7", "/tenants/807/orders/needle-807"}; !slices.Equal(needles, want) {
		t.Errorf("search NEEDLE: %v, want %v", needles, want)
	}
	t.Logf("http: whole search for a rare term in %d pages, %s", needlePages, needleTook)
	prefix, prefixPages, prefixTook := searchAll(t, inst, "/tenants/12/orders/99")
	wantPrefix := []string{"/tenants/12/orders/99"}
	for i := range 10 {
		wantPrefix = append(wantPrefix, fmt.Sprintf("/tenants/12/orders/99%d", i))
	}
	if !slices.Equal(prefix, wantPrefix) || prefixPages != 1 {
		t.Errorf("search /tenants/12/orders/99: %v in %d pages, want %v in one", prefix, prefixPages, wantPrefix)
	}
	t.Logf("http: prefix search in %s", prefixTook)
	// A page ends at its limit or when its ~50 ms are spent (§4.6a), so
	// the first 100 matches may take more than one page on a loaded machine.
	var matches []string
	took = 0
	body = map[string]any{"baseSubject": "/tenants", "contains": "42", "limit": 100}
	for pages = 1; len(matches) < 100; pages++ {
		var page matchesPage
		took += postSubjects(t, inst, "/api/v1/search-subjects", body, &page)
		if len(page.Subjects) > 100 || page.Next == nil {
			t.Fatalf("page %d of 42: %d matches, next %v", pages, len(page.Subjects), page.Next)
		}
		matches = append(matches, page.Subjects...)
		body["after"] = *page.Next
	}
	if want := firstMillionMatches("42", 100); !slices.Equal(matches[:100], want) {
		t.Errorf("first 100 matches of 42: %v, want %v", matches[:100], want)
	}
	t.Logf("http: first 100 matches of 42 in %d pages, %s", pages-1, took)

	// In Chromium.
	b := newBrowser(t, 1280, 900)
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	openRoot := b.measure("root", `location.hash = "#/subjects"`,
		`document.querySelector('#subject-tree [data-subject="/tenants"][aria-expanded="false"]')`, 30*time.Second)
	openFlat := b.measure("/flat open", `document.querySelector('#subject-tree [data-subject="/flat"] .twisty').click()`,
		`document.querySelector('#subject-tree [data-subject="`+flat[0]+`"]') && document.querySelector('#subject-tree [data-subject="/flat"]').getAttribute('aria-expanded') === 'true'`, 30*time.Second)
	if n := domRows(b, "#subject-tree [role=treeitem]"); n > maxDOMRows {
		t.Errorf("%d tree items in the DOM", n)
	}
	// Scrolled to the end (again while the page's rows still arrive).
	b.waitFor("the more row of /flat", `(() => { const v = document.querySelector('#subject-tree'); v.scrollTop = v.scrollHeight; return document.querySelector('#subject-tree [data-more="/flat"]'); })()`, 10*time.Second)
	b.screenshot("subjects-million-more")
	nextPage := b.measure("next page of /flat", `document.querySelector('#subject-tree [data-more="/flat"]').click()`,
		`document.querySelector('#subject-tree [data-subject="`+flat[100]+`"]')`, 30*time.Second)
	var posinset string
	b.eval(`document.querySelector('#subject-tree [data-subject="`+flat[100]+`"]').getAttribute('aria-posinset')`, &posinset)
	if posinset != "101" {
		t.Errorf("%s: aria-posinset %q, want 101", flat[100], posinset)
	}
	b.screenshot("subjects-million-tree")
	filter := func(text string) string {
		return `(() => { const f = document.querySelector("#subject-filter"); f.value = ` + strconv.Quote(text) + `; f.dispatchEvent(new Event("input")); })()`
	}
	firstMatches := b.measure("first matches", filter("42"),
		`document.querySelector('#subject-tree [aria-level="1"][data-subject*="42"]')`, 30*time.Second)
	b.waitFor("a pause in the search", `document.querySelector("#subjects-cancel").disabled`, 30*time.Second)
	var count string
	b.eval(`document.querySelector("#subjects-count").textContent`, &count)
	if !strings.Contains(count, "matches so far") {
		t.Errorf("after the first pages of 42 the count says %q", count)
	}
	rare := b.measure("rare search", filter("needle"),
		`document.querySelector("#subjects-count").textContent === "3 subjects match." && document.querySelector("#subjects-cancel").disabled`, maxRareSearch+30*time.Second)
	var shown []string
	b.eval(`[...document.querySelectorAll("#subject-tree [data-subject]")].map((n) => n.dataset.subject)`, &shown)
	if !slices.Equal(shown, needles) {
		t.Errorf("the filter shows %v, want %v", shown, needles)
	}
	b.screenshot("subjects-million-filter")
	t.Logf("console at 1,000,000 subjects: root open in %.0f ms, /flat (%d children) first page in %.0f ms, its next page in %.0f ms, first matches of 42 in %.0f ms (with the %d-ms debounce), whole search for needle in %.0f ms (with the debounce)",
		openRoot, millionFlat, openFlat, nextPage, firstMatches, 250, rare)
	for _, m := range []struct {
		what  string
		ms    float64
		bound time.Duration
	}{{"root", openRoot, maxSubjectPage}, {"/flat", openFlat, maxSubjectPage}, {"next page", nextPage, maxSubjectPage}, {"first matches", firstMatches, maxSubjectPage}, {"rare search", rare, maxRareSearch}} {
		if time.Duration(m.ms*float64(time.Millisecond)) > m.bound {
			t.Errorf("%s took %.0f ms, bound %s", m.what, m.ms, m.bound)
		}
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// measure runs action in the page and returns the milliseconds until cond
// holds, both measured in the page (polled every 2 ms, with
// performance.now()).
func (b *browser) measure(what, action, cond string, within time.Duration) float64 {
	b.t.Helper()
	expr := `new Promise((resolve, reject) => {
  const start = performance.now();
  const limit = start + ` + strconv.FormatInt(within.Milliseconds(), 10) + `;
  ` + action + `;
  const poll = () => {
    if (` + cond + `) resolve(performance.now() - start);
    else if (performance.now() > limit) reject(new Error("not within the limit"));
    else setTimeout(poll, 2);
  };
  poll();
})`
	var ms float64
	ctx, cancel := context.WithTimeout(b.ctx, within+5*time.Second)
	defer cancel()
	err := chromedp.Run(ctx, chromedp.Evaluate(expr, &ms, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	if err != nil {
		b.t.Fatalf("%s: not within %s: %v (console: %v)", what, within, err, b.consoleErrors())
	}
	return ms
}
