package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// gridRowCellsJS returns the cells of the row matching the selector passed as
// sel, by their data-label, or null when no such row is in the DOM.
const gridRowCellsJS = `((sel) => {
  const row = document.querySelector(sel);
  if (!row) return null;
  const out = {};
  for (const cell of row.children) out[cell.dataset.label] = cell.textContent;
  return out;
})`

// gridRowCells waits for the row sel and returns its cells by column.
func gridRowCells(b *browser, sel string) map[string]string {
	b.t.Helper()
	b.waitFor("row "+sel, `document.querySelector(`+strconv.Quote(sel)+`)`, 10*time.Second)
	var cells map[string]string
	b.eval(gridRowCellsJS+`(`+strconv.Quote(sel)+`)`, &cells)
	return cells
}

// subscriptionListRow is the selector of a subscription's row in the list.
func subscriptionListRow(name string) string {
	return `#subscriptions-list .vlist-body [data-name="` + name + `"]`
}

// subscriptionFigures is the part of read-subscription the tests compare.
type subscriptionFigures struct {
	Subscription string `json:"subscription"`
	Lag          int    `json:"lag"`
	InFlight     int    `json:"inFlight"`
	Parked       int    `json:"parked"`
	Consumers    []struct {
		Consumer string `json:"consumer"`
	} `json:"consumers"`
	Partitions []struct {
		Partition int     `json:"partition"`
		Position  *string `json:"position"`
		Consumer  *string `json:"consumer"`
		Epoch     int     `json:"epoch"`
		InFlight  int     `json:"inFlight"`
	} `json:"partitions"`
}

// readSubscriptionState reads the subscription name over HTTP.
func readSubscriptionState(t *testing.T, inst harness.Target, name string) subscriptionFigures {
	t.Helper()
	r := inst.Do("POST", "/api/v1/read-subscription", harness.Token, fmt.Sprintf(`{"subscription":%q}`, name))
	if r.StatusCode != 200 {
		t.Fatalf("read-subscription %s: %d %s", name, r.StatusCode, r.Body)
	}
	var s subscriptionFigures
	if err := json.Unmarshal(r.Body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// mustCreateSubscription creates a subscription with the request body.
func mustCreateSubscription(t *testing.T, inst harness.Target, body string) {
	t.Helper()
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, body); r.StatusCode != 200 {
		t.Fatalf("create-subscription %s: %d %s", body, r.StatusCode, r.Body)
	}
}

// settleDeliveries settles ds by route (with the extra members of the
// body) and returns the answer.
func settleDeliveries(t *testing.T, inst harness.Target, route, subscription string, ds []delivery, extra string) string {
	t.Helper()
	r := inst.Do("POST", "/api/v1/"+route, harness.Token, `{"subscription":`+strconv.Quote(subscription)+`,"deliveries":`+tokensOf(ds)+extra+`}`)
	if r.StatusCode != 200 {
		t.Fatalf("%s: %d %s", route, r.StatusCode, r.Body)
	}
	return string(r.Body)
}

// deliveredEventID is the id of a delivery's event.
func deliveredEventID(t *testing.T, d delivery) string {
	t.Helper()
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(d.Event, &e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// awaitDeliveredEvents reads c's deliveries until each of ids arrived (others
// are skipped) and returns them by id.
func awaitDeliveredEvents(t *testing.T, c *consumer, ids ...string) map[string]delivery {
	t.Helper()
	got := map[string]delivery{}
	for len(got) < len(ids) {
		d := c.deliveries(t, 1)[0]
		if id := deliveredEventID(t, d); indexOf(ids, id) >= 0 {
			got[id] = d
		}
	}
	return got
}

// acknowledgeUntilQuiet acknowledges what c receives until it is quiet.
func acknowledgeUntilQuiet(t *testing.T, inst harness.Target, c *consumer, subscription string) {
	t.Helper()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatal("the consume stream ended")
			}
			if l.Type != "delivery" {
				continue
			}
			var d delivery
			if err := json.Unmarshal(l.Payload, &d); err != nil {
				t.Fatal(err)
			}
			settleDeliveries(t, inst, "acknowledge-deliveries", subscription, []delivery{d}, "")
		case <-time.After(700 * time.Millisecond):
			return
		}
	}
}

// openSubscriptionsView shows the Subscriptions view and waits for its list.
func openSubscriptionsView(b *browser) {
	b.t.Helper()
	b.eval(`location.hash = "#/subscriptions"`, nil)
	b.waitFocus("#h-subscriptions")
	b.waitFor("subscriptions listed", `document.querySelector("#view-subscriptions").dataset.state === "ready"`, 10*time.Second)
}

// TestUISubscriptions drives the Subscriptions view against a real
// service with three subscriptions (one with a consumer that parked an
// event, one of eight partitions over two consumers, one without
// consumers): the list shows lag and consumers as the API does, the
// partitions their owners, positions and epochs, the lag charts the
// sampled metric; a parked event shows why it was parked, and replaying
// it (alone, then with another through "Replay all") makes the server
// deliver it again; reset and delete ask first, Cancel changes nothing,
// confirming does what the API says.
func TestUISubscriptions(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	// Ids 0 to 4; /orders has 0, 1, 3 and 4.
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed", "/orders/2", "io.example.placed", "/other", "io.example.placed",
		"/orders/1", "io.example.paid", "/orders/3", "io.example.placed"))
	mustCreateSubscription(t, inst, `{"subscription":"billing","subject":"/orders","options":{"recursive":true,"maxInFlight":1}}`)
	mustCreateSubscription(t, inst, `{"subscription":"shipping","subject":"/orders","options":{"recursive":true,"partitions":8}}`)
	mustCreateSubscription(t, inst, `{"subscription":"audit","subject":"/","options":{"recursive":true}}`)

	// billing: event 0 acknowledged, event 1 parked, event 3 in flight, event 4 waiting.
	w1 := consume(t, inst, "billing", "w1")
	first := w1.deliveries(t, 1)
	settleDeliveries(t, inst, "acknowledge-deliveries", "billing", first, "")
	second := w1.deliveries(t, 1)
	if deliveredEventID(t, first[0]) != "0" || deliveredEventID(t, second[0]) != "1" {
		t.Fatalf("billing delivered %s, then %s", first[0].Event, second[0].Event)
	}
	if body := settleDeliveries(t, inst, "park-deliveries", "billing", second, `,"reason":"customer unknown"`); !strings.Contains(body, `"parked":1`) {
		t.Fatalf("park: %s", body)
	}
	third := w1.deliveries(t, 1)
	if deliveredEventID(t, third[0]) != "3" {
		t.Fatalf("billing delivered %s after the park", third[0].Event)
	}
	// shipping: two consumers share the partitions; everything acknowledged.
	s1, s2 := consume(t, inst, "shipping", "s1"), consume(t, inst, "shipping", "s2")
	waitUntil(t, 10*time.Second, func() bool { return len(readSubscriptionState(t, inst, "shipping").Consumers) == 2 })
	acknowledgeUntilQuiet(t, inst, s1, "shipping")
	acknowledgeUntilQuiet(t, inst, s2, "shipping")

	b := newBrowser(t, 1280, 900)
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	openSubscriptionsView(b)

	// The list: lag, consumers, in flight and parked as the API has them.
	lags := 0
	for _, name := range []string{"audit", "billing", "shipping"} {
		api := readSubscriptionState(t, inst, name)
		lags += api.Lag
		var consumers []string
		for _, c := range api.Consumers {
			consumers = append(consumers, c.Consumer)
		}
		want := "0"
		if len(consumers) > 0 {
			want = fmt.Sprintf("%d: %s", len(consumers), strings.Join(consumers, ", "))
		}
		cells := gridRowCells(b, subscriptionListRow(name))
		if cells["Lag"] != strconv.Itoa(api.Lag) || cells["Consumers"] != want || cells["In flight"] != strconv.Itoa(api.InFlight) ||
			cells["Parked"] != strconv.Itoa(api.Parked) || cells["Partitions"] != strconv.Itoa(len(api.Partitions)) {
			t.Errorf("%s: the list shows %v; the API has lag %d, consumers %q, in flight %d, parked %d, %d partitions",
				name, cells, api.Lag, want, api.InFlight, api.Parked, len(api.Partitions))
		}
	}
	if cells := gridRowCells(b, subscriptionListRow("audit")); cells["Lag"] != "5" || cells["Consumers"] != "0" {
		t.Errorf("audit (no consumer, every event waiting): %v", cells)
	}
	if cells := gridRowCells(b, subscriptionListRow("billing")); cells["Lag"] != "1" || cells["Consumers"] != "1: w1" || cells["Parked"] != "1" {
		t.Errorf("billing: %v", cells)
	}
	b.screenshot("subscriptions")

	// The partitions of shipping: owner, position and epoch as the API has them.
	b.run("select shipping", chromedp.Click(subscriptionListRow("shipping"), chromedp.ByQuery))
	b.waitFor("shipping loaded", `document.querySelector('#subscription-detail[data-name="shipping"][data-loaded="true"]')`, 10*time.Second)
	owners := map[string]int{}
	for _, p := range readSubscriptionState(t, inst, "shipping").Partitions {
		cells := gridRowCells(b, fmt.Sprintf(`#subscription-partitions .vlist-body [data-partition="%d"]`, p.Partition))
		owner, position := "none", "none settled"
		if p.Consumer != nil {
			owner = *p.Consumer
		}
		if p.Position != nil {
			position = *p.Position
		}
		owners[owner]++
		if cells["Owner"] != owner || cells["Position"] != position || cells["Epoch"] != strconv.Itoa(p.Epoch) || cells["In flight"] != strconv.Itoa(p.InFlight) {
			t.Errorf("shipping partition %d: the table shows %v; the API has owner %s, position %s, epoch %d, in flight %d",
				p.Partition, cells, owner, position, p.Epoch, p.InFlight)
		}
	}
	if owners["s1"] != 4 || owners["s2"] != 4 {
		t.Errorf("shipping's partitions by owner: %v", owners)
	}
	if got := b.text("#subscription-consumers"); !strings.Contains(got, "s1") || !strings.Contains(got, "s2") {
		t.Errorf("shipping's consumers: %q", got)
	}
	b.screenshot("subscriptions-partitions")

	// billing: its partition, its lag over time, its parked event and why.
	b.run("select billing", chromedp.Click(subscriptionListRow("billing"), chromedp.ByQuery))
	b.waitFor("billing loaded", `document.querySelector('#subscription-detail[data-name="billing"][data-loaded="true"]')`, 10*time.Second)
	api := readSubscriptionState(t, inst, "billing")
	if cells := gridRowCells(b, `#subscription-partitions .vlist-body [data-partition="0"]`); cells["Owner"] != "w1" || cells["Position"] != "1" ||
		cells["Epoch"] != strconv.Itoa(api.Partitions[0].Epoch) || cells["In flight"] != "1" {
		t.Errorf("billing's partition: %v, API %+v", cells, api.Partitions[0])
	}
	b.waitFor("billing's lag charted", `document.querySelector("#chart-subscription-lag").dataset.now === "1"`, 20*time.Second)
	b.waitFor("every lag charted", `document.querySelector("#chart-subscriptions-lag").dataset.now === "`+strconv.Itoa(lags)+`"`, 20*time.Second)
	if summary := b.text("#chart-subscription-lag .chart-summary"); !strings.Contains(summary, "Now 1 event;") {
		t.Errorf("billing's lag chart says %q", summary)
	}
	parkedRow := `#parked-list .vlist-body [data-id="1"]`
	if cells := gridRowCells(b, parkedRow); cells["Reason"] != "customer unknown" || cells["Attempts"] != "1" || cells["Partition"] != "0" || cells["Subject"] != "/orders/2" {
		t.Errorf("parked event 1: %v", cells)
	}
	b.run("why parked", chromedp.Click(parkedRow, chromedp.ByQuery), chromedp.WaitVisible("#parked-detail", chromedp.ByQuery))
	why := b.text("#parked-why")
	if !strings.Contains(why, "customer unknown") || !strings.Contains(why, "1 (parked by its first delivery)") {
		t.Errorf("why event 1 was parked: %q", why)
	}
	if event := b.text("#parked-event"); !strings.Contains(event, `"subject": "/orders/2"`) || !strings.Contains(event, `"id": "1"`) {
		t.Errorf("the parked event shown: %q", event)
	}
	b.eval(`document.querySelector("#parked-detail").scrollIntoView({ block: "end" }), true`, nil)
	b.screenshot("subscriptions-parked")

	// Replay it from the page: the server delivers it again, attempt 1.
	b.run("replay event 1", chromedp.Click("#parked-replay", chromedp.ByQuery), chromedp.WaitVisible("#parked-status", chromedp.ByQuery))
	if status := b.text("#parked-status"); !strings.Contains(status, "Event 1 replayed") {
		t.Errorf("after the replay: %q", status)
	}
	replayed := awaitDeliveredEvents(t, w1, "1")["1"]
	if replayed.Attempt != 1 {
		t.Errorf("the replayed delivery: %+v", replayed)
	}
	b.waitFor("no parked event", `document.querySelector("#parked-count").dataset.value === "0" && !document.querySelector("#parked-empty").hidden`, 10*time.Second)
	if api := readSubscriptionState(t, inst, "billing"); api.Parked != 0 {
		t.Errorf("parked after the replay: %d", api.Parked)
	}

	// Park it again and event 3 too; "Replay all" delivers both again.
	settleDeliveries(t, inst, "park-deliveries", "billing", []delivery{replayed}, `,"reason":"still unknown"`)
	settleDeliveries(t, inst, "park-deliveries", "billing", third, "")
	b.waitFor("two parked events", `document.querySelector("#parked-count").dataset.value === "2"`, 10*time.Second)
	if cells := gridRowCells(b, `#parked-list .vlist-body [data-id="3"]`); cells["Reason"] != "—" {
		t.Errorf("parked event 3 without a reason: %v", cells)
	}
	b.run("replay all", chromedp.Click("#parked-replay-all", chromedp.ByQuery))
	b.waitFor("replayed", `document.querySelector("#parked-status").textContent.startsWith("2 parked events replayed")`, 10*time.Second)
	for id, d := range awaitDeliveredEvents(t, w1, "1", "3") {
		if d.Attempt != 1 {
			t.Errorf("event %s replayed with attempt %d", id, d.Attempt)
		}
	}
	b.waitFor("no parked event again", `document.querySelector("#parked-count").dataset.value === "0"`, 10*time.Second)

	// Reset: the dialog names the subscription and the start; Cancel
	// changes nothing; confirming moves every position there.
	before := readSubscriptionState(t, inst, "billing")
	b.run("choose the end", chromedp.SetValue("#reset-start", "end", chromedp.ByQuery), chromedp.Click("#reset-open", chromedp.ByQuery),
		chromedp.WaitVisible("#reset-dialog", chromedp.ByQuery))
	if text := b.text("#reset-dialog"); !strings.Contains(text, "Reset subscription billing?") || !strings.Contains(text, "moves to the end") {
		t.Errorf("reset dialog: %q", text)
	}
	b.waitFocus("#reset-cancel")
	b.screenshot("subscriptions-reset-dialog")
	b.run("cancel", chromedp.Click("#reset-cancel", chromedp.ByQuery), chromedp.WaitNotVisible("#reset-dialog", chromedp.ByQuery))
	b.waitFocus("#reset-open")
	time.Sleep(500 * time.Millisecond)
	if after := readSubscriptionState(t, inst, "billing"); after.Partitions[0].Epoch != before.Partitions[0].Epoch || *after.Partitions[0].Position != *before.Partitions[0].Position {
		t.Errorf("Cancel reset the subscription: %+v → %+v", before.Partitions[0], after.Partitions[0])
	}
	b.run("choose an event id", chromedp.SetValue("#reset-start", "after", chromedp.ByQuery), chromedp.Evaluate(`document.querySelector("#reset-start").dispatchEvent(new Event("change"))`, nil),
		chromedp.WaitVisible("#reset-after", chromedp.ByQuery), chromedp.SetValue("#reset-after", "x", chromedp.ByQuery), chromedp.Click("#reset-open", chromedp.ByQuery),
		chromedp.WaitVisible("#subscription-error", chromedp.ByQuery))
	var dialogOpen bool
	if b.eval(`document.querySelector("#reset-dialog").open`, &dialogOpen); dialogOpen {
		t.Errorf("the dialog opened for the event id x")
	}
	b.run("reset after event 2", chromedp.SetValue("#reset-after", "2", chromedp.ByQuery), chromedp.Click("#reset-open", chromedp.ByQuery),
		chromedp.WaitVisible("#reset-dialog", chromedp.ByQuery))
	if text := b.text("#reset-dialog-start"); text != "after event 2" {
		t.Errorf("reset dialog start %q", text)
	}
	b.run("confirm", chromedp.Click("#reset-confirm", chromedp.ByQuery), chromedp.WaitVisible("#subscription-status", chromedp.ByQuery))
	after := readSubscriptionState(t, inst, "billing")
	if p := after.Partitions[0]; p.Epoch != before.Partitions[0].Epoch+1 || p.Position == nil || *p.Position != "2" {
		t.Errorf("after the reset to after event 2: %+v (before %+v)", p, before.Partitions[0])
	}
	b.waitFor("the new epoch shown", `document.querySelector('#subscription-partitions [data-partition="0"] [data-label="Epoch"]').textContent === "`+strconv.Itoa(after.Partitions[0].Epoch)+`"`, 10*time.Second)
	if status := b.text("#subscription-status"); !strings.Contains(status, "billing was reset to after event 2") {
		t.Errorf("reset status %q", status)
	}
	b.screenshot("subscriptions-reset")

	// Delete: Cancel keeps it; confirming deletes it.
	b.run("select audit", chromedp.Click(subscriptionListRow("audit"), chromedp.ByQuery))
	b.waitFor("audit loaded", `document.querySelector('#subscription-detail[data-name="audit"][data-loaded="true"]')`, 10*time.Second)
	b.run("delete", chromedp.Click("#delete-open", chromedp.ByQuery), chromedp.WaitVisible("#delete-dialog", chromedp.ByQuery))
	if text := b.text("#delete-dialog"); !strings.Contains(text, "Delete subscription audit?") || !strings.Contains(text, "cannot be undone") {
		t.Errorf("delete dialog: %q", text)
	}
	b.key(kb.Escape)
	b.run("dialog closed", chromedp.WaitNotVisible("#delete-dialog", chromedp.ByQuery))
	b.run("cancel", chromedp.Click("#delete-open", chromedp.ByQuery), chromedp.WaitVisible("#delete-dialog", chromedp.ByQuery),
		chromedp.Click("#delete-cancel", chromedp.ByQuery), chromedp.WaitNotVisible("#delete-dialog", chromedp.ByQuery))
	time.Sleep(500 * time.Millisecond)
	readSubscriptionState(t, inst, "audit")
	b.run("confirm", chromedp.Click("#delete-open", chromedp.ByQuery), chromedp.WaitVisible("#delete-dialog", chromedp.ByQuery),
		chromedp.Click("#delete-confirm", chromedp.ByQuery), chromedp.WaitVisible("#subscriptions-done", chromedp.ByQuery))
	checkError(t, inst.Do("POST", "/api/v1/read-subscription", harness.Token, `{"subscription":"audit"}`), 404, "subscription 'audit' not found")
	b.waitFor("audit gone from the list", `!document.querySelector('`+subscriptionListRow("audit")+`') && document.querySelector("#subscriptions-count").dataset.value === "2"`, 10*time.Second)
	b.waitFocus("#h-subscriptions")

	// On a phone: nothing wider than the screen, the grids' rows are cards.
	b.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	// The rows become cards, taller: the list lays them out again in the next frame.
	b.waitFor("cards", `getComputedStyle(document.querySelector('`+subscriptionListRow("billing")+`')).display === "block"`, 5*time.Second)
	b.run("select billing", chromedp.Sleep(300*time.Millisecond), chromedp.Click(subscriptionListRow("billing"), chromedp.ByQuery))
	b.waitFor("billing loaded", `document.querySelector('#subscription-detail[data-name="billing"][data-loaded="true"]')`, 10*time.Second)
	var width int
	b.run("page width", chromedp.Sleep(300*time.Millisecond), chromedp.Evaluate(`document.documentElement.scrollWidth`, &width))
	if width > 390 {
		t.Errorf("the view is %d px wide on a 390-px screen", width)
	}
	for _, sel := range []string{"#subscriptions-list", "#subscription-partitions"} {
		var display string
		b.eval(`getComputedStyle(document.querySelector("`+sel+` .vlist-body > .vrow")).display`, &display)
		if display != "block" {
			t.Errorf("%s: rows are not cards on a phone (display %q)", sel, display)
		}
	}
	b.screenshot("narrow-subscriptions")
	b.run("reset dialog", chromedp.Click("#reset-open", chromedp.ByQuery), chromedp.WaitVisible("#reset-dialog", chromedp.ByQuery))
	var fits bool
	b.eval(`(() => { const r = document.querySelector("#reset-dialog").getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth && r.bottom <= innerHeight; })()`, &fits)
	if !fits {
		t.Errorf("the reset dialog does not fit the phone's screen")
	}
	b.screenshot("narrow-subscriptions-dialog")
	b.key(kb.Escape)
	b.run("dialog closed", chromedp.WaitNotVisible("#reset-dialog", chromedp.ByQuery))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestUISubscriptionsMany lists 300 subscriptions, 1,024 partitions and 600
// parked events: only a window of rows is in the DOM, and the keyboard
// reaches the last of each.
func TestUISubscriptionsMany(t *testing.T) {
	const subscriptions, partitions, parked = 300, 1024, 600
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	var pairs []string
	for i := range parked {
		pairs = append(pairs, fmt.Sprintf("/bulk/%d", i), "io.example.bulked")
	}
	mustWrite(t, inst, candidates(pairs...))
	mustCreateSubscription(t, inst, fmt.Sprintf(`{"subscription":"many-000","subject":"/bulk","options":{"recursive":true,"partitions":%d,"maxInFlight":%d}}`, partitions, parked))
	for i := 1; i < subscriptions; i++ {
		mustCreateSubscription(t, inst, fmt.Sprintf(`{"subscription":"many-%03d","subject":"/bulk/%d"}`, i, i))
	}
	c := consume(t, inst, "many-000", "bulk-worker")
	ds := c.deliveries(t, parked)
	if body := settleDeliveries(t, inst, "park-deliveries", "many-000", ds, `,"reason":"bulk"`); !strings.Contains(body, fmt.Sprintf(`"parked":%d`, parked)) {
		t.Fatalf("park: %s", body)
	}

	b := newBrowser(t, 1280, 900)
	b.signIn(inst, harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	openSubscriptionsView(b)
	if got := b.attr("#subscriptions-list", "aria-rowcount"); got != strconv.Itoa(subscriptions+1) {
		t.Errorf("aria-rowcount %s", got)
	}
	b.waitFor("rows rendered", `document.querySelector("#subscriptions-list .vlist-body > .vrow")`, 10*time.Second)
	if n := domRows(b, "#subscriptions-list .vlist-body > .vrow"); n > 60 {
		t.Errorf("%d rows of %d subscriptions in the DOM", n, subscriptions)
	}
	// The list is one tab stop; End reaches the last subscription, Enter opens it.
	b.tabTo("row:2", false)
	if got := b.tab(false); strings.HasPrefix(got, "row:") {
		t.Errorf("the list is more than one tab stop (Tab went to %s)", got)
	}
	b.tabTo("row:2", true)
	b.key(kb.End)
	b.waitFocus("row:" + strconv.Itoa(subscriptions+1))
	if got := b.attr(":focus", "data-name"); got != fmt.Sprintf("many-%03d", subscriptions-1) {
		t.Errorf("End focused %q", got)
	}
	if n := domRows(b, "#subscriptions-list .vlist-body > .vrow"); n > 60 {
		t.Errorf("%d rows in the DOM at the end of the list", n)
	}
	b.key(kb.Home)
	b.waitFocus("row:2")
	b.key(kb.Enter)
	b.waitFocus("#h-subscription-detail")
	b.waitFor("many-000 loaded", `document.querySelector('#subscription-detail[data-name="many-000"][data-loaded="true"]')`, 10*time.Second)

	// 1,024 partitions and 600 parked events, a window of each in the DOM.
	if got := b.attr("#subscription-partitions", "aria-rowcount"); got != strconv.Itoa(partitions+1) {
		t.Errorf("partitions aria-rowcount %s", got)
	}
	b.waitFor("every parked event", `document.querySelector("#parked-count").dataset.value === "`+strconv.Itoa(parked)+`"`, 10*time.Second)
	for _, sel := range []string{"#subscription-partitions", "#parked-list"} {
		b.waitFor(sel+" rendered", `document.querySelector(`+strconv.Quote(sel+" .vlist-body > .vrow")+`)`, 10*time.Second)
		if n := domRows(b, sel+" .vlist-body > .vrow"); n > 40 {
			t.Errorf("%s: %d rows in the DOM", sel, n)
		}
	}
	b.run("focus the partitions", chromedp.Focus(`#subscription-partitions .vlist-body > .vrow`, chromedp.ByQuery))
	b.key(kb.End)
	b.waitFor("last partition", `document.activeElement.dataset.partition === "`+strconv.Itoa(partitions-1)+`"`, 10*time.Second)
	b.run("focus the parked events", chromedp.Focus(`#parked-list .vlist-body > .vrow`, chromedp.ByQuery))
	b.key(kb.End)
	b.waitFocus("event:" + strconv.Itoa(parked-1))
	b.key(kb.Enter)
	b.waitFocus("#parked-detail")
	if why := b.text("#parked-why"); !strings.Contains(why, "bulk") {
		t.Errorf("why the last event was parked: %q", why)
	}
	b.key(kb.Escape)
	b.waitFocus("event:" + strconv.Itoa(parked-1))
	b.screenshot("subscriptions-many")

	// The filter.
	b.run("filter", chromedp.SendKeys("#subscriptions-filter", "many-29", chromedp.ByQuery))
	b.waitFor("filtered", `document.querySelector("#subscriptions-count").dataset.value === "10"`, 10*time.Second)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestUISubscriptionsPostgresMode: on a node of a PostgreSQL-mode cluster
// the view lists a subscription created on another node, with its
// consumer on a third.
func TestUISubscriptionsPostgresMode(t *testing.T) {
	nodes := startPostgres(t, 3, "--with-ui").Nodes()
	if r := nodes[1].Do("POST", "/api/v1/create-subscription", harness.Token, `{"subscription":"billing","subject":"/orders"}`); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	consume(t, nodes[2], "billing", "w1")
	b := newBrowser(t, 1280, 900)
	b.signIn(nodes[0], harness.Token)
	b.run("dashboard", chromedp.WaitVisible(`#view-dashboard[data-loaded="true"]`, chromedp.ByQuery))
	b.eval(`location.hash = "#/subscriptions"`, nil)
	b.waitFor("subscriptions listed", `document.querySelector("#view-subscriptions").dataset.state === "ready"`, 10*time.Second)
	b.waitFor("billing listed", `document.querySelector('#subscriptions-list [data-name="billing"]')`, 10*time.Second)
	b.run("open billing", chromedp.Click(`#subscriptions-list [data-name="billing"]`, chromedp.ByQuery))
	b.waitFor("billing loaded", `document.querySelector('#subscription-detail[data-name="billing"][data-loaded="true"]')`, 10*time.Second)
	b.waitFor("its consumer on the third node", `document.querySelector("#subscription-consumers").textContent.includes("w1")`, 10*time.Second)
	b.screenshot("subscriptions-postgres")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
