package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestSetup(t *testing.T) {
	for _, tc := range []struct {
		url      string
		postgres bool
		nodes    int
		want     string
	}{
		{"", false, 1, "pebble"},
		{"", true, 1, "postgres, 1 node"},
		{"", true, 3, "postgres, 3 nodes"},
		{"http://a,http://b", false, 1, "running service, 2 nodes"},
	} {
		if got := Setup(tc.url, tc.postgres, tc.nodes); got != tc.want {
			t.Errorf("Setup(%q, %v, %d) = %q, want %q", tc.url, tc.postgres, tc.nodes, got, tc.want)
		}
	}
}

func TestPrintSummary(t *testing.T) {
	run := func(setup, load string, write, p99 float64) Report {
		return Report{Environment: Environment{Setup: setup, LoadAverage: load + " 1/200 42"},
			Scenarios: []Record{{Scenario: "batch", EventsPerSecond: write, LatencyP99Ms: p99}}}
	}
	var out bytes.Buffer
	PrintSummary(&out, []Report{
		run("pebble", "1.00 2.00 3.00", 300, 3), run("postgres, 3 nodes", "2.00 2.00 2.00", 90, 9),
		run("pebble", "1.50 2.00 3.00", 100, 1), run("pebble", "1.20 2.00 3.00", 200, 2),
	})
	for _, want := range []string{
		"pebble (3 runs)", "postgres, 3 nodes (1 runs)",
		"batch                 200 [100–300]                   90.0 [90.0–90.0]",
		"batch                 2.0 [1.0–3.0]                   9.0 [9.0–9.0]",
		"pebble                         1.00 2.00 3.00; 1.50 2.00 3.00; 1.20 2.00 3.00",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
