package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	rec := func(scenario string, eventsPerSecond, p99 float64) Record {
		return Record{Scenario: scenario, Name: scenario + " x64", EventsPerSecond: eventsPerSecond, LatencyP99Ms: p99}
	}
	older := Report{Scenarios: []Record{
		rec("baseline", 50000, 2), rec("write", 20000, 8), rec("write-precondition", 10000, 10),
		rec("batch", 150000, 30), rec("read", 400000, 300), rec("query-count", 0, 0), rec("only-old", 1, 1),
		rec("write", 30000, 8),
	}}
	newer := Report{Scenarios: []Record{
		rec("write", 19000, 8.7),            // within 10%
		rec("write-precondition", 8900, 10), // 11% slower
		rec("batch", 150000, 33.5),          // p99 12% later
		rec("read", 450000, 300),            // 12.5% faster
		rec("baseline", 50000, 1.7),         // p99 15% sooner
		rec("query-count", 2_000_000, 400),  // nothing to compare with
		rec("only-new", 1, 1),               // left out
		rec("write", 20000, 8),              // the second write against the second
		rec("write", 1, 1),                  // a third: left out
	}}
	want := []struct {
		scenario                string
		throughput, p99         float64
		regression, improvement bool
	}{
		{"write", 0.95, 1.0875, false, false},
		{"write-precondition", 0.89, 1, true, false},
		{"batch", 1, 1.1167, true, false},
		{"read", 1.125, 1, false, true},
		{"baseline", 1, 0.85, false, true},
		{"query-count", 0, 0, false, false},
		{"write", 0.6667, 1, true, false},
	}
	older.Scenarios[1].BaselineRatio, newer.Scenarios[0].BaselineRatio = 0.4, 0.38
	got := Compare(older, newer, 0.10)
	if len(got) != len(want) {
		t.Fatalf("%d comparisons, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.New.Scenario != w.scenario || g.Old.Scenario != w.scenario || !near(g.Throughput, w.throughput) || !near(g.P99, w.p99) ||
			g.Regression != w.regression || g.Improvement != w.improvement {
			t.Errorf("%d: got %s %.4f %.4f regression %v improvement %v, want %+v", i, g.New.Scenario, g.Throughput, g.P99, g.Regression, g.Improvement, w)
		}
	}
	if !near(got[0].Relative, 0.95) || got[1].Relative != 0 {
		t.Errorf("ratios to the baseline compared: %v, %v", got[0].Relative, got[1].Relative)
	}
	if got[6].Old.EventsPerSecond != 30000 {
		t.Errorf("the second write is compared with %v, want the second old write", got[6].Old)
	}
}

func near(a, b float64) bool { return a-b < 0.0001 && b-a < 0.0001 }

func TestPrintComparison(t *testing.T) {
	older := Report{Scenarios: []Record{{Scenario: "write", Name: "write 1/request x32", EventsPerSecond: 20000, LatencyP99Ms: 8, BaselineRatio: 0.4}}}
	newer := Report{Scenarios: []Record{{Scenario: "write", Name: "write 1/request x64", EventsPerSecond: 15000, LatencyP99Ms: 8, BaselineRatio: 0.42}}}
	var out bytes.Buffer
	PrintComparison(&out, older, Compare(older, newer, 0.1), 0.1)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "tolerance ±10%") ||
		!strings.Contains(lines[1], "0.75") || !strings.Contains(lines[1], "of baseline  40% →  42%  1.05") || !strings.Contains(lines[1], "REGRESSION") || !strings.Contains(lines[1], `(was "write 1/request x32")`) {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	PrintComparison(&out, older, nil, 0.1)
	if !strings.Contains(out.String(), "no scenario in common") {
		t.Fatalf("output without comparisons:\n%s", out.String())
	}
}
