package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// consumer is an open consume-subscription stream.
type consumer struct {
	lines  chan ndjsonLine
	cancel context.CancelFunc
}

// consume opens a consume stream of subscription for name on inst.
func consume(t *testing.T, inst harness.Target, subscription, name string) *consumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := fmt.Sprintf(`{"subscription":%q,"consumer":%q}`, subscription, name)
	req, err := http.NewRequestWithContext(ctx, "POST", inst.URL("http")+"/api/v1/consume-subscription", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		cancel()
		t.Fatalf("consume: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &consumer{lines: make(chan ndjsonLine, 1024), cancel: cancel}
	go func() {
		defer close(c.lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l ndjsonLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				c.lines <- l
			}
		}
	}()
	t.Cleanup(cancel)
	return c
}

// delivery is the payload of a delivery line.
type delivery struct {
	Delivery  string          `json:"delivery"`
	Attempt   int             `json:"attempt"`
	Partition int             `json:"partition"`
	Event     json.RawMessage `json:"event"`
}

// next returns the next line that is no heartbeat, failing after timeout.
func (c *consumer) next(t *testing.T, timeout time.Duration) ndjsonLine {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatal("the consume stream ended")
			}
			if l.Type != "heartbeat" {
				return l
			}
		case <-deadline:
			t.Fatal("no line in time")
		}
	}
}

// deliveries reads n delivery lines (skipping assignments).
func (c *consumer) deliveries(t *testing.T, n int) []delivery {
	t.Helper()
	var out []delivery
	for len(out) < n {
		l := c.next(t, 10*time.Second)
		switch l.Type {
		case "delivery":
			var d delivery
			if err := json.Unmarshal(l.Payload, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		case "assignment":
		default:
			t.Fatalf("unexpected line %s %s", l.Type, l.Payload)
		}
	}
	return out
}

func tokensOf(ds []delivery) string {
	var quoted []string
	for _, d := range ds {
		quoted = append(quoted, fmt.Sprintf("%q", d.Delivery))
	}
	return "[" + strings.Join(quoted, ",") + "]"
}

func subscriptionOf(t *testing.T, inst harness.Target, name string) map[string]any {
	t.Helper()
	r := inst.Do("POST", "/api/v1/read-subscription", harness.Token, fmt.Sprintf(`{"subscription":%q}`, name))
	if r.StatusCode != 200 {
		t.Fatalf("read-subscription: %d %s", r.StatusCode, r.Body)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSubscriptionRoutesAndErrors(t *testing.T) { eachTarget(t, testSubscriptionRoutesAndErrors) }

func testSubscriptionRoutesAndErrors(t *testing.T, start starter) {
	inst := start(t)
	post := func(path, body string) harness.Response {
		return inst.Do("POST", "/api/v1/"+path, harness.Token, body)
	}
	create := `{"subscription":"billing","subject":"/orders","options":{"recursive":true,"partitions":4,"acknowledgeTimeout":"5s"}}`
	r := post("create-subscription", create)
	if r.StatusCode != 200 || !strings.Contains(string(r.Body), `"partitions":4`) || !strings.Contains(string(r.Body), `"position":null`) {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	if r := post("create-subscription", create); r.StatusCode != 200 {
		t.Fatalf("the same definition again: %d %s", r.StatusCode, r.Body)
	}
	checkError(t, post("create-subscription", `{"subscription":"billing","subject":"/orders"}`), 409,
		"state conflict: subscription 'billing' exists with another definition")
	checkError(t, post("create-subscription", `{"subscription":"a b","subject":"/orders"}`), 400, "invalid request: invalid name 'a b'")
	checkError(t, post("create-subscription", `{"subscription":"x","subject":"orders"}`), 400, "invalid subject: 'orders'")
	checkError(t, post("create-subscription", `{"subscription":"x","subject":"/o","options":{"batch":1}}`), 400, "invalid request: unknown option 'batch'")
	checkError(t, post("create-subscription", `{"subscription":"x","subject":"/o","options":{"partitions":0}}`), 400, "invalid request: partitions must be 1 to 1024")
	checkError(t, post("create-subscription", `{"subscription":"x","subject":"/o","options":{"eventTypes":["nope"]}}`), 400, "invalid event type: 'nope'")
	checkError(t, post("read-subscription", `{"subscription":"none"}`), 404, "subscription 'none' not found")
	checkError(t, post("acknowledge-deliveries", `{"subscription":"billing","deliveries":["???"]}`), 400, "invalid delivery: '???'")
	checkError(t, post("acknowledge-deliveries", `{"subscription":"billing","deliveries":[]}`), 400, "invalid request: deliveries must hold 1 to 10000 tokens")
	checkError(t, inst.Do("POST", "/api/v1/create-subscription", "", create), 401, "unauthorized")

	if lines := stream(t, inst, "/api/v1/read-subscriptions", `{}`); len(lines) != 1 || lines[0].Type != "subscription" {
		t.Fatalf("read-subscriptions: %v", lines)
	}
	r = post("reset-subscription", `{"subscription":"billing","start":"end"}`)
	if r.StatusCode != 200 || !strings.Contains(string(r.Body), `"epoch":1`) {
		t.Fatalf("reset: %d %s", r.StatusCode, r.Body)
	}
	if r := post("delete-subscription", `{"subscription":"billing"}`); r.StatusCode != 200 || string(r.Body) != `{"subscription":"billing","deleted":true}`+"\n" {
		t.Fatalf("delete: %d %q", r.StatusCode, r.Body)
	}
	checkError(t, post("delete-subscription", `{"subscription":"billing"}`), 404, "subscription 'billing' not found")
}

// TestConsumeSettleAndReactExactlyOnce consumes a subscription: deliveries
// in id order per partition, acknowledgements that move the position, a
// replaced consumer's error line and stale tokens, a write with
// acknowledge that is both or neither, park and replay.
func TestConsumeSettleAndReactExactlyOnce(t *testing.T) {
	eachTarget(t, testConsumeSettleAndReactExactlyOnce)
}

func testConsumeSettleAndReactExactlyOnce(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed", "/other", "io.example.placed", "/orders/2", "io.example.placed", "/orders/1", "io.example.paid"))
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, `{"subscription":"billing","subject":"/orders","options":{"recursive":true}}`); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	w1 := consume(t, inst, "billing", "w1")
	if l := w1.next(t, 10*time.Second); l.Type != "assignment" || string(l.Payload) != `{"partitions":[0]}` {
		t.Fatalf("first line %s %s", l.Type, l.Payload)
	}
	ds := w1.deliveries(t, 3)
	for i, want := range []string{`"id":"0"`, `"id":"2"`, `"id":"3"`} {
		if !strings.Contains(string(ds[i].Event), want) || ds[i].Attempt != 1 {
			t.Fatalf("delivery %d: %+v", i, ds[i])
		}
	}
	r := inst.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(ds[:1])+`}`)
	if r.StatusCode != 200 || string(r.Body) != `{"acknowledged":1,"stale":[]}`+"\n" {
		t.Fatalf("acknowledge: %d %s", r.StatusCode, r.Body)
	}
	if p := subscriptionOf(t, inst, "billing")["partitions"].([]any)[0].(map[string]any); p["position"] != "1" || p["consumer"] != "w1" {
		t.Fatalf("partition after the acknowledgement: %v", p)
	}

	// A restarted worker of the same name takes over; the old tokens are stale.
	w1b := consume(t, inst, "billing", "w1")
	if l := w1.next(t, 10*time.Second); l.Type != "error" || !strings.Contains(string(l.Payload), "consumer replaced") {
		t.Fatalf("the replaced stream's last line: %s %s", l.Type, l.Payload)
	}
	again := w1b.deliveries(t, 2)
	if again[0].Attempt != 1 || again[0].Delivery == ds[1].Delivery { // the same attempt, a new epoch
		t.Fatalf("sent again on the new stream: %+v", again)
	}
	before := len(stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`))
	invoice := `{"events":[{"source":"https://x","subject":"/invoices/2","type":"io.example.invoiced","data":{}}],"acknowledge":{"subscription":"billing","deliveries":` + tokensOf(ds[1:2]) + `}}`
	checkError(t, inst.Do("POST", "/api/v1/write-events", harness.Token, invoice), 409, "state conflict: delivery is no longer held")
	if n := len(stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)); n != before {
		t.Fatalf("a write with a stale acknowledgement wrote %d events", n-before)
	}
	invoice = strings.Replace(invoice, tokensOf(ds[1:2]), tokensOf(again[:1]), 1)
	if r := inst.Do("POST", "/api/v1/write-events", harness.Token, invoice); r.StatusCode != 200 {
		t.Fatalf("a write with a held acknowledgement: %d %s", r.StatusCode, r.Body)
	}
	if r := inst.Do("POST", "/api/v1/park-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(again[1:])+`,"reason":"bad"}`); r.StatusCode != 200 || !strings.Contains(string(r.Body), `"parked":1`) {
		t.Fatalf("park: %d %s", r.StatusCode, r.Body)
	}
	parked := stream(t, inst, "/api/v1/read-parked-events", `{"subscription":"billing"}`)
	if len(parked) != 1 || parked[0].Type != "parkedEvent" || !strings.Contains(string(parked[0].Payload), `"reason":"bad"`) {
		t.Fatalf("parked events: %v", parked)
	}
	if r := inst.Do("POST", "/api/v1/replay-parked-events", harness.Token, `{"subscription":"billing"}`); string(r.Body) != `{"replayed":1}`+"\n" {
		t.Fatalf("replay: %d %s", r.StatusCode, r.Body)
	}
	replayed := w1b.deliveries(t, 1)
	if !strings.Contains(string(replayed[0].Event), `"id":"3"`) || replayed[0].Attempt != 1 {
		t.Fatalf("the replay: %+v", replayed[0])
	}
	inst.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(replayed)+`}`)
	info := subscriptionOf(t, inst, "billing")
	if info["inFlight"] != float64(0) || info["parked"] != float64(0) || info["lag"] != float64(0) {
		t.Fatalf("after the work: %v", info)
	}
	if len(inst.Nodes()) > 1 {
		return // the metrics are each node's own
	}
	m := metrics(t, inst)
	for series, want := range map[string]float64{
		`eventstore_subscription_deliveries_total{outcome="acknowledged",subscription="billing"}`: 3, // one, the reaction, the replay
		`eventstore_subscription_deliveries_total{outcome="parked",subscription="billing"}`:       1,
		`eventstore_subscription_deliveries_total{outcome="stale",subscription="billing"}`:        1,
		`eventstore_subscription_consumers{subscription="billing"}`:                               1,
		`eventstore_subscription_lag_events{subscription="billing"}`:                              0,
		`eventstore_subscription_in_flight{subscription="billing"}`:                               0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
}

// TestSubscriptionsSurviveARestart: the unsettled deliveries come again,
// the acknowledged ones never.
func TestSubscriptionsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--api-token=" + harness.Token, "--data-directory=" + dir, "--http-enabled", "--https-enabled=false", "--http-port=0"}
	inst := harness.Start(t, bin, args...)
	mustWrite(t, inst, candidates("/a", "io.example.x", "/a", "io.example.x", "/a", "io.example.x"))
	inst.Do("POST", "/api/v1/create-subscription", harness.Token, `{"subscription":"s","subject":"/a"}`)
	c := consume(t, inst, "s", "w")
	ds := c.deliveries(t, 3)
	inst.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"s","deliveries":`+tokensOf([]delivery{ds[1]})+`}`)
	c.cancel()
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	inst = harness.Start(t, bin, args...)
	again := consume(t, inst, "s", "w").deliveries(t, 2)
	for _, d := range again {
		if strings.Contains(string(d.Event), `"id":"1"`) || d.Attempt != 1 {
			t.Fatalf("after the restart: %+v", d)
		}
	}
}

// TestRebalancing grows the consumers of 16 partitions from 1 to 4 and
// shrinks them to 2: after each change the assignments cover the
// partitions once with shares that differ by at most one, and between two
// of its assignments every consumer receives each subject's events in id
// order (a partition that comes back is sent again from its first
// unsettled event).
func TestRebalancing(t *testing.T) { eachTarget(t, testRebalancing) }

func testRebalancing(t *testing.T, start starter) {
	inst := start(t)
	var body []string
	for i := range 64 {
		body = append(body, fmt.Sprintf("/orders/%d", i%32), "io.example.placed")
	}
	mustWrite(t, inst, candidates(body...))
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token,
		`{"subscription":"s","subject":"/orders","options":{"recursive":true,"partitions":16,"maxInFlight":1000}}`); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	consumers := map[string]*consumer{}
	shares := func() map[string]int {
		info := subscriptionOf(t, inst, "s")
		out := map[string]int{}
		for _, p := range info["partitions"].([]any) {
			owner, _ := p.(map[string]any)["consumer"].(string)
			out[owner]++
		}
		return out
	}
	check := func(n int) {
		t.Helper()
		waitUntil(t, 10*time.Second, func() bool { // on several nodes: a release, then a take, a second each
			s := shares()
			lo, hi, total := 16, 0, 0
			for name := range consumers {
				lo, hi, total = min(lo, s[name]), max(hi, s[name]), total+s[name]
			}
			return len(consumers) == n && total == 16 && hi-lo <= 1
		})
	}
	lastID := map[string]map[string]int{} // consumer → subject → last id received
	drain := func() {
		for name, c := range consumers {
			for {
				select {
				case l, ok := <-c.lines:
					if !ok {
						t.Fatalf("the stream of %s ended", name)
					}
					if l.Type == "assignment" {
						lastID[name] = map[string]int{}
					}
					if l.Type != "delivery" {
						continue
					}
					var d delivery
					var e struct {
						ID      string `json:"id"`
						Subject string `json:"subject"`
					}
					if json.Unmarshal(l.Payload, &d) != nil || json.Unmarshal(d.Event, &e) != nil {
						t.Fatalf("delivery %s", l.Payload)
					}
					var id int
					fmt.Sscan(e.ID, &id)
					if lastID[name] == nil {
						lastID[name] = map[string]int{}
					}
					if last, ok := lastID[name][e.Subject]; ok && id <= last {
						t.Fatalf("%s got %s event %d after %d", name, e.Subject, id, last)
					}
					lastID[name][e.Subject] = id
					continue
				case <-time.After(200 * time.Millisecond):
				}
				break
			}
		}
	}
	consumers["c0"] = consume(t, inst, "s", "c0")
	check(1)
	drain()
	for _, name := range []string{"c1", "c2", "c3"} {
		consumers[name] = consume(t, inst, "s", name)
	}
	check(4)
	drain()
	for _, name := range []string{"c0", "c3"} {
		consumers[name].cancel()
		delete(consumers, name)
	}
	check(2)
	drain()
}
