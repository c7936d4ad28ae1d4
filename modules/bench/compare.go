package bench

import (
	"fmt"
	"io"
	"strconv"
)

// Comparison is a scenario present in two runs: the new figures against
// the old.
type Comparison struct {
	Old, New Record
	// Throughput and P99 are new/old of events/s and of the p99 latency;
	// 0 when the old figure is 0. Relative is new/old of the ratio to the
	// baseline, which the load of the machine's other tenants mostly
	// cancels out; 0 unless both runs have one.
	Throughput, P99, Relative float64
	// Regression: throughput below 1−tolerance or p99 above 1+tolerance of
	// the old. Improvement: the reverse, and no regression.
	Regression, Improvement bool
}

// Compare pairs the scenarios of newer with those of older by their
// Scenario key, the i-th occurrence of a key with the i-th, in newer's
// order; scenarios present in only one run are left out.
func Compare(older, newer Report, tolerance float64) []Comparison {
	occurrences := func(rs []Record) map[string][]Record {
		m := map[string][]Record{}
		for _, r := range rs {
			m[r.Scenario] = append(m[r.Scenario], r)
		}
		return m
	}
	olds := occurrences(older.Scenarios)
	seen := map[string]int{}
	var out []Comparison
	for _, n := range newer.Scenarios {
		i := seen[n.Scenario]
		seen[n.Scenario]++
		if i >= len(olds[n.Scenario]) {
			continue
		}
		o := olds[n.Scenario][i]
		c := Comparison{Old: o, New: n, Throughput: ratio(n.EventsPerSecond, o.EventsPerSecond), P99: ratio(n.LatencyP99Ms, o.LatencyP99Ms)}
		if n.BaselineRatio > 0 {
			c.Relative = ratio(n.BaselineRatio, o.BaselineRatio)
		}
		slower := c.Throughput != 0 && c.Throughput < 1-tolerance
		later := c.P99 != 0 && c.P99 > 1+tolerance
		faster := c.Throughput > 1+tolerance
		sooner := c.P99 != 0 && c.P99 < 1-tolerance
		c.Regression = slower || later
		c.Improvement = !c.Regression && (faster || sooner)
		out = append(out, c)
	}
	return out
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// PrintComparison prints one line per comparison: events/s and p99, old →
// new, with the ratio new/old, the ratio to the baseline when both runs
// have it, and "REGRESSION" or "improvement" beyond tolerance.
func PrintComparison(w io.Writer, older Report, cs []Comparison, tolerance float64) {
	e := older.Environment
	fmt.Fprintf(w, "compared with the run of %s (%s, revision %s, GOMAXPROCS %d, load %s): new/old, tolerance ±%.0f%%\n",
		e.Date.Format("2006-01-02 15:04 MST"), e.Version, e.Revision, e.GOMAXPROCS, e.LoadAverage, 100*tolerance)
	if len(cs) == 0 {
		fmt.Fprintln(w, "no scenario in common")
		return
	}
	for _, c := range cs {
		verdict := ""
		switch {
		case c.Regression:
			verdict = "  REGRESSION"
		case c.Improvement:
			verdict = "  improvement"
		}
		if c.Relative != 0 {
			verdict = fmt.Sprintf("   of baseline %3.0f%% → %3.0f%% %5.2f", 100*c.Old.BaselineRatio, 100*c.New.BaselineRatio, c.Relative) + verdict
		}
		if c.Old.Name != c.New.Name {
			verdict += "  (was " + strconv.Quote(c.Old.Name) + ")"
		}
		fmt.Fprintf(w, "%-28s %10.0f → %10.0f events/s %5.2f   p99 %8.3f → %8.3f ms %5.2f%s\n",
			c.New.Name, c.Old.EventsPerSecond, c.New.EventsPerSecond, c.Throughput,
			c.Old.LatencyP99Ms, c.New.LatencyP99Ms, c.P99, verdict)
	}
}
