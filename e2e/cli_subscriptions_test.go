package e2e

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestCLISubscriptions runs `eventstore subscriptions` of the built binary
// against a running one: every subcommand as text and with --json, and
// the service's errors on stderr with exit 1.
func TestCLISubscriptions(t *testing.T) {
	inst := startPebble(t)
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed", "/orders/2", "io.example.placed", "/orders/1", "io.example.paid", "/other", "io.example.placed"))
	remote := []string{"--url", inst.URL("http"), "--token-file", harness.WriteFile(t, t.TempDir(), "token", harness.Token+"\n")}
	run := func(sub string, args ...string) (int, string, string) {
		t.Helper()
		return harness.Run(t, bin, 20*time.Second, append(append([]string{"subscriptions", sub}, remote...), args...)...)
	}
	ok := func(sub string, args ...string) string {
		t.Helper()
		code, stdout, stderr := run(sub, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("subscriptions %s %q: exit %d, stderr %q", sub, args, code, stderr)
		}
		return stdout
	}
	lines := func(text string, patterns ...string) {
		t.Helper()
		for _, p := range patterns {
			if !regexp.MustCompile(`(?m)^` + p + `$`).MatchString(text) {
				t.Errorf("no line %q in\n%s", p, text)
			}
		}
	}

	out := ok("create", "--recursive", "--partitions", "2", "--event-type", "io.example.placed", "--max-deliveries", "3",
		"--acknowledge-timeout", "5s", "--start", "beginning", "billing", "/orders")
	lines(out, `subscription\s+billing`, `subject\s+/orders \(recursive\)`, `event types\s+io.example.placed`, `start\s+beginning`,
		`partitions\s+2`, `max in flight\s+100`, `acknowledge timeout\s+5s`, `max deliveries\s+3`, `lag\s+2`, `in flight\s+0`, `parked\s+0`,
		`no consumers connected`, `PARTITION\s+POSITION\s+CONSUMER\s+EPOCH\s+IN FLIGHT`, `0\s+-\s+-\s+0\s+0`, `1\s+-\s+-\s+0\s+0`)
	// The same definition again is no change; with --json, the service's JSON.
	out = ok("create", "--json", "--recursive", "--partitions", "2", "--event-type", "io.example.placed", "--max-deliveries", "3",
		"--acknowledge-timeout", "5s", "billing", "/orders")
	var created map[string]any
	if err := json.Unmarshal([]byte(out), &created); err != nil || created["subscription"] != "billing" || created["options"].(map[string]any)["maxDeliveries"] != float64(3) {
		t.Fatalf("create --json printed %q (%v)", out, err)
	}
	ok("create", "--start", "end", "audit", "/")

	out = ok("list")
	lines(out, `NAME\s+SUBJECT\s+LAG\s+CONSUMERS\s+IN FLIGHT\s+PARKED`, `audit\s+/\s+0\s+0\s+0\s+0`, `billing\s+/orders \(recursive\)\s+2\s+0\s+0\s+0`)
	out = ok("list", "--json")
	var names []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var s map[string]any
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("list --json line %q: %v", l, err)
		}
		names = append(names, s["subscription"].(string))
	}
	if strings.Join(names, ",") != "audit,billing" {
		t.Fatalf("list --json named %v", names)
	}
	// show --json is read-subscription's answer byte for byte.
	if out, want := ok("show", "--json", "billing"), inst.Do("POST", "/api/v1/read-subscription", harness.Token, `{"subscription":"billing"}`).Body; out != string(want) {
		t.Fatalf("show --json printed\n%s\nread-subscription answers\n%s", out, want)
	}

	// A consumer takes both partitions and parks the first order.
	c := consume(t, inst, "billing", "w1")
	ds := c.deliveries(t, 2)
	if r := inst.Do("POST", "/api/v1/park-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(ds[:1])+`,"reason":"no\nstock"}`); r.StatusCode != 200 {
		t.Fatalf("park: %d %s", r.StatusCode, r.Body)
	}
	var parkedEvent struct {
		ID      string `json:"id"`
		Subject string `json:"subject"`
	}
	if err := json.Unmarshal(ds[0].Event, &parkedEvent); err != nil {
		t.Fatal(err)
	}
	out = ok("show", "billing")
	lines(out, `in flight\s+1`, `parked\s+1`, `CONSUMER\s+CONNECTED AT\s+PARTITIONS`, `w1\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+0,1`)
	out = ok("parked", "billing")
	lines(out, `EVENT\s+SUBJECT\s+TYPE\s+PARTITION\s+ATTEMPTS\s+PARKED AT\s+REASON`,
		parkedEvent.ID+`\s+`+regexp.QuoteMeta(parkedEvent.Subject)+`\s+io.example.placed\s+\d\s+1\s+\S+\s+no stock`)
	out = ok("parked", "--json", "billing")
	var parked struct {
		Reason string          `json:"reason"`
		Event  json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal([]byte(out), &parked); err != nil || parked.Reason != "no\nstock" || !bytes.Contains(parked.Event, []byte(`"id":"`+parkedEvent.ID+`"`)) {
		t.Fatalf("parked --json printed %q (%v)", out, err)
	}
	lines(ok("replay", "billing", parkedEvent.ID), `replayed 1 parked event of billing`)
	if again := c.deliveries(t, 1); !bytes.Contains(again[0].Event, []byte(`"id":"`+parkedEvent.ID+`"`)) || again[0].Attempt != 1 {
		t.Fatalf("the replay delivered %+v", again[0])
	}
	if out := ok("replay", "--json", "billing"); out != `{"replayed":0}`+"\n" {
		t.Fatalf("replay --json printed %q", out)
	}
	c.cancel()

	out = ok("reset", "--start", "end", "billing")
	lines(out, `reset subscription billing to end`, `lag\s+0`, `0\s+\d+\s+\S+\s+\d+\s+0`)
	out = ok("reset", "--json", "billing") // to the beginning
	var reset map[string]any
	if err := json.Unmarshal([]byte(out), &reset); err != nil || reset["lag"] != float64(2) {
		t.Fatalf("reset --json printed %q (%v)", out, err)
	}
	lines(ok("delete", "billing"), `deleted subscription billing`)
	if out := ok("delete", "--json", "audit"); out != `{"subscription":"audit","deleted":true}`+"\n" {
		t.Fatalf("delete --json printed %q", out)
	}
	if out := ok("list"); out != "no subscriptions\n" {
		t.Fatalf("list after the deletes printed %q", out)
	}

	// The service's errors: its status and message on stderr, exit 1.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "billing"}, "eventstore: subscriptions show: read-subscription: 404 subscription 'billing' not found\n"},
		{[]string{"delete", "billing"}, "eventstore: subscriptions delete: delete-subscription: 404 subscription 'billing' not found\n"},
		{[]string{"parked", "billing"}, "eventstore: subscriptions parked: read-parked-events: 404 subscription 'billing' not found\n"},
		{[]string{"create", "--partitions", "2000", "x", "/orders"}, "eventstore: subscriptions create: create-subscription: 400 invalid request: partitions must be 1 to 1024\n"},
		{[]string{"create", "x", "orders"}, "eventstore: subscriptions create: create-subscription: 400 invalid subject: 'orders'\n"},
	} {
		code, stdout, stderr := run(tc.args[0], tc.args[1:]...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("subscriptions %q: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	code, _, stderr := harness.Run(t, bin, 10*time.Second, "subscriptions", "list", "--url", inst.URL("http"), "--token", "wrong")
	if code != 1 || stderr != "eventstore: subscriptions list: read-subscriptions: 401 unauthorized\n" {
		t.Errorf("a wrong token: exit %d, %q", code, stderr)
	}
}

// TestCLISubscriptionsUsageErrors: usage errors exit 2 with one line on
// stderr before anything is sent.
func TestCLISubscriptionsUsageErrors(t *testing.T) {
	remote := []string{"--url", "http://127.0.0.1:1", "--token", "x"}
	with := func(args ...string) []string {
		return append(append([]string{"subscriptions", args[0]}, remote...), args[1:]...)
	}
	expectUsageErrors(t, []usageCase{
		{"no subcommand", []string{"subscriptions"}, nil, "a subcommand is required: list, show, create, delete, reset, parked or replay"},
		{"unknown subcommand", []string{"subscriptions", "drop"}, nil, `unknown subcommand "drop"`},
		{"no url", []string{"subscriptions", "list", "--token", "x"}, nil, "--url is required"},
		{"no token", []string{"subscriptions", "list", "--url", "http://127.0.0.1:1"}, []string{"EVENTSTORE_API_TOKEN="}, "an API token is required"},
		{"no name", with("show"), nil, "subscriptions show takes NAME, got 0 arguments"},
		{"no subject", with("create", "billing"), nil, "subscriptions create takes NAME SUBJECT, got 1 argument "},
		{"arguments to list", with("list", "billing"), nil, "subscriptions list takes no arguments"},
		{"flag after the arguments", with("create", "billing", "/orders", "--recursive"), nil, "flag --recursive after the arguments: flags go first"},
		{"unknown flag", with("list", "--bogus"), nil, "unknown flag --bogus"},
		{"bad start", with("create", "--start", "middle", "billing", "/orders"), nil, `--start: start "middle" is none of beginning, end or an event id`},
		{"bad reset start", with("reset", "--start", "-1", "billing"), nil, "--start"},
		{"zero partitions", with("create", "--partitions", "0", "billing", "/orders"), nil, "--partitions must be at least 1"},
		{"bad duration", with("create", "--acknowledge-timeout", "soon", "billing", "/orders"), nil, `invalid value "soon" for --acknowledge-timeout`},
		{"bad event id", with("replay", "billing", "x"), nil, `"x" is no event id`},
	})
}
