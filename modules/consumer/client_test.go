package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is a scripted answer of a route: a status and a body.
type answer struct {
	status int
	body   string
}

// scripted starts a service answering each route as script says and
// returns a client of it and the bodies it received, by route.
func scripted(t *testing.T, script map[string]answer) (*Client, func(route string) []string) {
	t.Helper()
	var mu sync.Mutex
	bodies := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := strings.TrimPrefix(r.URL.Path, "/api/v1/")
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies[route] = append(bodies[route], string(raw))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer secret" || r.Method != http.MethodPost {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		a, ok := script[route]
		switch {
		case !ok:
			http.Error(w, "not found: unknown route", http.StatusNotFound)
		case a.status != http.StatusOK:
			http.Error(w, a.body, a.status)
		default:
			_, _ = io.WriteString(w, a.body)
		}
	}))
	t.Cleanup(srv.Close)
	return NewClient(srv.URL, "secret", nil), func(route string) []string {
		mu.Lock()
		defer mu.Unlock()
		return bodies[route]
	}
}

// billing is a read-subscription body.
const billing = `{"subscription":"billing","subject":"/orders","options":{"recursive":true,"eventTypes":["io.example.placed"],"start":{"afterEventId":"41"},"partitions":4,"maxInFlight":100,"acknowledgeTimeout":"1m30s","maxDeliveries":10},"createdAt":"2026-01-02T03:04:05.123456789Z","lag":7,"inFlight":2,"parked":1,"consumers":[{"consumer":"w1","connectedAt":"2026-01-02T03:04:06Z","partitions":[0,3]}],"partitions":[{"partition":0,"position":"41","consumer":"w1","epoch":3,"inFlight":2},{"partition":1,"position":null,"consumer":null,"epoch":0,"inFlight":0}]}`

func TestAdminCalls(t *testing.T) {
	ctx := context.Background()
	c, bodies := scripted(t, map[string]answer{
		"create-subscription":  {200, billing + "\n"},
		"read-subscription":    {404, "subscription 'none' not found"},
		"read-subscriptions":   {200, `{"type":"subscription","payload":` + billing + "}\n" + `{"type":"subscription","payload":` + strings.Replace(billing, `"billing"`, `"audit"`, 1) + "}\n"},
		"reset-subscription":   {200, billing + "\n"},
		"delete-subscription":  {200, `{"subscription":"billing","deleted":true}` + "\n"},
		"read-parked-events":   {200, `{"type":"parkedEvent","payload":{"partition":2,"attempts":10,"parkedAt":"2026-01-02T03:04:05Z","reason":null,"event":{"id":"5","subject":"/orders/1","signature":null}}}` + "\n" + `{"type":"parkedEvent","payload":{"partition":0,"attempts":1,"parkedAt":"2026-01-02T03:04:05Z","reason":"bad","event":{"id":"9"}}}` + "\n"},
		"replay-parked-events": {200, `{"replayed":2}` + "\n"},
	})

	s, err := c.Create(ctx, "billing", "/orders", Options{Recursive: true, EventTypes: []string{"io.example.placed"},
		Start: StartAfter("41"), Partitions: 4, AcknowledgeTimeout: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bodies("create-subscription")[0], `{"subscription":"billing","subject":"/orders","options":{"recursive":true,"eventTypes":["io.example.placed"],"start":{"afterEventId":"41"},"partitions":4,"acknowledgeTimeout":"1m30s"}}`; got != want {
		t.Errorf("create body\n got %s\nwant %s", got, want)
	}
	want := Subscription{Name: "billing", Subject: "/orders",
		Options:   Options{Recursive: true, EventTypes: []string{"io.example.placed"}, Start: StartAfter("41"), Partitions: 4, MaxInFlight: 100, AcknowledgeTimeout: 90 * time.Second, MaxDeliveries: 10},
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), Lag: 7, InFlight: 2, Parked: 1,
		Consumers:  []ConsumerInfo{{Name: "w1", ConnectedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), Partitions: []int{0, 3}}},
		Partitions: []Partition{{Partition: 0, Position: "41", Consumer: "w1", Epoch: 3, InFlight: 2}, {Partition: 1}},
		Raw:        json.RawMessage(billing)}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("create answer\n got %+v\nwant %+v", s, want)
	}

	_, err = c.Get(ctx, "none")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Message != "subscription 'none' not found" || apiErr.Route != "read-subscription" {
		t.Fatalf("get of an unknown subscription: %#v", err)
	}
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotHeld) || err.Error() != "read-subscription: 404 subscription 'none' not found" {
		t.Errorf("the 404: Is(ErrNotFound) %v, text %q", errors.Is(err, ErrNotFound), err)
	}

	list, err := c.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "billing" || list[1].Name != "audit" || list[1].Partitions[0].Position != "41" {
		t.Fatalf("list: %v %+v", err, list)
	}
	if !strings.Contains(string(list[1].Raw), `"audit"`) {
		t.Errorf("list keeps the raw JSON of each subscription: %s", list[1].Raw)
	}

	if _, err := c.Reset(ctx, "billing", StartEnd); err != nil {
		t.Fatal(err)
	}
	if got := bodies("reset-subscription")[0]; got != `{"subscription":"billing","start":"end"}` {
		t.Errorf("reset body %s", got)
	}
	if err := c.Delete(ctx, "billing"); err != nil || bodies("delete-subscription")[0] != `{"subscription":"billing"}` {
		t.Errorf("delete: %v %v", err, bodies("delete-subscription"))
	}

	parked, err := c.Parked(ctx, "billing")
	if err != nil || len(parked) != 2 {
		t.Fatalf("parked: %v %+v", err, parked)
	}
	if p := parked[0]; p.Partition != 2 || p.Attempts != 10 || p.Reason != "" || p.Event.ID != "5" || p.Event.Subject != "/orders/1" || p.Event.Signature != "" || !p.ParkedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("parked event %+v", p)
	}
	if parked[1].Reason != "bad" || string(parked[1].Event.Raw) != `{"id":"9"}` {
		t.Errorf("parked event %+v", parked[1])
	}

	// Replay of no ids (a filtered list that came out empty) replays
	// nothing; all is ReplayAll's.
	if n, err := c.Replay(ctx, "billing"); n != 0 || err != nil {
		t.Errorf("replay of no ids: %d %v", n, err)
	}
	if n, err := c.Replay(ctx, "billing", []string{}...); n != 0 || err != nil || len(bodies("replay-parked-events")) != 0 {
		t.Errorf("replay of an empty list: %d %v, requests %q", n, err, bodies("replay-parked-events"))
	}
	if n, err := c.Replay(ctx, "billing", "5", "9"); n != 2 || err != nil {
		t.Errorf("replay of 5 and 9: %d %v", n, err)
	}
	if n, err := c.ReplayAll(ctx, "billing"); n != 2 || err != nil {
		t.Errorf("replay all: %d %v", n, err)
	}
	if got := bodies("replay-parked-events"); len(got) != 2 || got[0] != `{"subscription":"billing","eventIds":["5","9"]}` || got[1] != `{"subscription":"billing"}` {
		t.Errorf("replay bodies %q", got)
	}
}

func TestStreamErrorLine(t *testing.T) {
	c, _ := scripted(t, map[string]answer{
		"read-subscriptions": {200, `{"type":"subscription","payload":` + billing + "}\n" + `{"type":"error","payload":{"error":"internal error: the disk said no"}}` + "\n"},
	})
	list, err := c.List(context.Background())
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 200 || apiErr.Message != "internal error: the disk said no" || len(list) != 1 {
		t.Fatalf("an error line: %v, %d subscriptions", err, len(list))
	}
	if err.Error() != "read-subscriptions: the stream ended with: internal error: the disk said no" {
		t.Errorf("error text %q", err)
	}
}

func TestSettleSplitsTokens(t *testing.T) {
	f := newFakeService(t)
	f.stale["t-7"], f.stale["t-20001"] = true, true
	tokens := make([]string, 25_000)
	for i := range tokens {
		tokens[i] = "t-" + strconv.Itoa(i)
	}
	res, err := f.client().Acknowledge(context.Background(), "billing", tokens...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Settled != 24_998 || !reflect.DeepEqual(res.Stale, []string{"t-7", "t-20001"}) {
		t.Errorf("result %d settled, stale %v", res.Settled, res.Stale)
	}
	requests, _ := f.settled("acknowledge-deliveries")
	if len(requests) != 3 || len(requests[0]) != MaxTokens || len(requests[1]) != MaxTokens || len(requests[2]) != 5000 || requests[2][4999] != "t-24999" {
		t.Errorf("%d requests", len(requests))
	}

	if _, err := f.client().Retry(context.Background(), "billing", 1500*time.Millisecond, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client().Park(context.Background(), "billing", "bad data", "b"); err != nil {
		t.Fatal(err)
	}
	_, retries := f.settled("retry-deliveries")
	_, parks := f.settled("park-deliveries")
	if retries[0].After != "1.5s" || parks[0].Reason != "bad data" || parks[0].Subscription != "billing" {
		t.Errorf("retry %+v park %+v", retries, parks)
	}
	if res, err := f.client().Acknowledge(context.Background(), "billing"); err != nil || res.Settled != 0 {
		t.Errorf("no tokens: %+v %v", res, err)
	}
}

func TestWriteEventsWithAcknowledge(t *testing.T) {
	f := newFakeService(t)
	answers := []answer{
		{200, `[{"source":"https://x","subject":"/invoices/1","type":"io.example.invoiced","specversion":"1.0","id":"12","time":"2026-01-02T03:04:05.000000001Z","datacontenttype":"application/json","predecessorhash":"p","data":{},"hash":"h","signature":null}]`},
		{409, "state conflict: delivery is no longer held"},
		{409, "state conflict: precondition failed"},
	}
	f.write = func(writeRequest) (int, string) {
		a := answers[0]
		answers = answers[1:]
		return a.status, a.body
	}
	c := f.client()
	events := []EventCandidate{{Source: "https://x", Subject: "/invoices/1", Type: "io.example.invoiced"}}
	opts := WriteOptions{Preconditions: []Precondition{IsSubjectPristine("/invoices/1")}, Acknowledge: &Acknowledgement{Subscription: "billing", Deliveries: []string{"tok"}}}
	written, err := c.WriteEvents(context.Background(), events, opts)
	if err != nil || len(written) != 1 || written[0].ID != "12" || !strings.HasPrefix(string(written[0].Raw), `{"source"`) {
		t.Fatalf("write: %v %+v", err, written)
	}
	f.mu.Lock()
	body := string(f.requests[0].body)
	f.mu.Unlock()
	if want := `{"events":[{"source":"https://x","subject":"/invoices/1","type":"io.example.invoiced","data":{}}],"preconditions":[{"type":"isSubjectPristine","payload":{"subject":"/invoices/1"}}],"acknowledge":{"subscription":"billing","deliveries":["tok"]}}`; body != want {
		t.Errorf("write body\n got %s\nwant %s", body, want)
	}
	if _, err := c.WriteEvents(context.Background(), events, opts); !errors.Is(err, ErrNotHeld) {
		t.Errorf("409 not held: %v, want ErrNotHeld", err)
	}
	_, err = c.WriteEvents(context.Background(), events, opts)
	var apiErr *Error
	if errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrPreconditionFailed) || !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Message != "state conflict: precondition failed" {
		t.Errorf("409 precondition failed: %v", err)
	}
}

func TestOptionsJSON(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		wire string
	}{
		{"defaults", Options{}, `{}`},
		{"end", Options{Start: StartEnd, MaxInFlight: 1, MaxDeliveries: 3}, `{"start":"end","maxInFlight":1,"maxDeliveries":3}`},
		{"after", Options{Recursive: true, Start: StartAfter("0"), AcknowledgeTimeout: time.Second}, `{"recursive":true,"start":{"afterEventId":"0"},"acknowledgeTimeout":"1s"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.opts)
			if err != nil || string(raw) != tc.wire {
				t.Fatalf("marshal: %s %v, want %s", raw, err, tc.wire)
			}
			var back Options
			if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back, tc.opts) {
				t.Fatalf("unmarshal: %+v %v, want %+v", back, err, tc.opts)
			}
		})
	}
	var o Options
	if err := json.Unmarshal([]byte(`{"start":"middle"}`), &o); err == nil {
		t.Error("an unknown start decoded")
	}
}

func TestParseStart(t *testing.T) {
	for text, want := range map[string]Start{"beginning": StartBeginning, "end": StartEnd, "0": StartAfter("0"), "41": StartAfter("41")} {
		if got, err := ParseStart(text); err != nil || got != want {
			t.Errorf("ParseStart(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	for _, text := range []string{"", "-1", "+1", "x", "1.5", "Beginning"} {
		if _, err := ParseStart(text); err == nil {
			t.Errorf("ParseStart(%q) accepted", text)
		}
	}
	if StartAfter("41").String() != "after event 41" || StartEnd.String() != "end" || (Start{}).String() != "beginning" {
		t.Error("Start.String")
	}
}

func TestTransient(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{errors.New("connection refused"), true},
		{&Error{StatusCode: 503}, true},
		{&Error{StatusCode: 500}, true},
		{&Error{StatusCode: 408}, true},
		{&Error{StatusCode: 200, Message: "service unavailable: shutting down"}, true},
		{&Error{StatusCode: 400}, false},
		{&Error{StatusCode: 401}, false},
		{&Error{StatusCode: 404}, false},
		{&Error{StatusCode: 409}, false},
		{&Error{StatusCode: 501}, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, true},
	}
	for _, tc := range cases {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
