package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/bench"
)

func TestBenchCompare(t *testing.T) {
	dir := t.TempDir()
	older, newer := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")
	write := func(path string, eventsPerSecond float64) {
		r := bench.Report{Scenarios: []bench.Record{{Scenario: "write", Name: "write 1/request x64", EventsPerSecond: eventsPerSecond, LatencyP99Ms: 8}}}
		if err := bench.WriteReport(path, r); err != nil {
			t.Fatal(err)
		}
	}
	write(older, 20000)
	write(newer, 17000)
	for _, c := range []struct {
		args         []string
		want, absent string
	}{
		{[]string{"bench", "compare", older, newer}, "0.85", ""},
		{[]string{"bench", "compare", older, newer}, "REGRESSION", ""},
		{[]string{"bench", "compare", "--tolerance", "0.2", older, newer}, "0.85", "REGRESSION"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"eventstore"}, c.args...), &stdout, &stderr)
		if code != 0 || !strings.Contains(stdout.String(), c.want) || c.absent != "" && strings.Contains(stdout.String(), c.absent) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q without %q", c.args, code, stdout.String(), stderr.String(), c.want, c.absent)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	t.Setenv("EVENTSTORE_API_TOKEN", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--scenario", "write,nope"}, `unknown scenario "nope"`},
		{[]string{"bench", "--url", "http://127.0.0.1:1", "--server-flag=--memory-limit=256MiB"}, "apply to the servers bench starts, not to --url"},
		{[]string{"bench", "--url", "http://127.0.0.1:1", "--nodes", "3"}, "apply to the servers bench starts, not to --url"},
		{[]string{"bench", "--url", "http://127.0.0.1:1", "--access-tokens", "1000"}, "apply to the servers bench starts, not to --url"},
		{[]string{"bench", "--nodes", "3"}, "more than 1 only with --postgres-url"},
		{[]string{"bench", "--observe-rate", "0"}, "--observe-rate must be at least 1, got 0"},
		{[]string{"bench", "--clients", "-2"}, "--clients must be at least 1, got -2"},
		{[]string{"bench", "--dcb-events", "-1"}, "--dcb-events must not be negative, got -1"},
		{[]string{"bench", "summary"}, "needs reports"},
		{[]string{"bench", "--compare", "/nonexistent/old.json"}, "read the report"},
		{[]string{"bench", "compare", "one.json"}, "needs two reports"},
		{[]string{"bench", "extra"}, `unexpected argument "extra"`},
		{[]string{"bench", "--url", "http://127.0.0.1:1", "--scenario", "read"}, "an API token is required"},
		{[]string{"bench", "--url", "http://127.0.0.1:1", "--token", "a", "--token-file", "t"}, "cannot be combined"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"eventstore"}, c.args...), &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), exitUsage, c.want)
		}
	}
}

func TestRepeatedKeepsCommas(t *testing.T) {
	var r repeated
	for _, v := range []string{"--memory-limit=256MiB", "--http-addresses=127.0.0.1,::1"} {
		if err := r.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.values) != 2 || r.values[1] != "--http-addresses=127.0.0.1,::1" {
		t.Fatalf("values %q", r.values)
	}
}
