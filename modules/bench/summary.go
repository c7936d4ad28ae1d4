package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Setup names the kind of service a run loads: a running one at url (the
// comma-separated URLs of its nodes), or nodes that bench starts in
// PostgreSQL mode or with Pebble.
func Setup(url string, postgres bool, nodes int) string {
	plural := func(n int) string {
		if n == 1 {
			return "1 node"
		}
		return fmt.Sprintf("%d nodes", n)
	}
	switch {
	case url != "":
		return "running service, " + plural(strings.Count(url, ",")+1)
	case postgres:
		return "postgres, " + plural(nodes)
	default:
		return "pebble"
	}
}

// PrintSummary puts runs side by side: a column per setup (in the order
// the setups first occur), a row per scenario, each cell the median and
// the range over that setup's runs, of events/s and then of p99; then the
// load averages at the start of the runs.
func PrintSummary(out io.Writer, reports []Report) {
	var setups, scenarios []string
	runs := map[string][]Report{}
	for _, r := range reports {
		setup := r.Environment.Setup
		if setup == "" {
			setup = "unknown setup"
		}
		if runs[setup] == nil {
			setups = append(setups, setup)
		}
		runs[setup] = append(runs[setup], r)
		for _, rec := range r.Scenarios {
			if !slices.Contains(scenarios, rec.Scenario) {
				scenarios = append(scenarios, rec.Scenario)
			}
		}
	}
	header := fmt.Sprintf("%-20s", "")
	for _, setup := range setups {
		header += fmt.Sprintf("  %-30s", fmt.Sprintf("%s (%d runs)", setup, len(runs[setup])))
	}
	for _, figure := range []struct {
		title string
		value func(Record) float64
	}{
		{"events/s: median [min–max]", func(r Record) float64 { return r.EventsPerSecond }},
		{"p99 ms: median [min–max] (observe: acknowledgement to receipt)", func(r Record) float64 { return r.LatencyP99Ms }},
	} {
		fmt.Fprintf(out, "%s\n%s\n", figure.title, strings.TrimRight(header, " "))
		for _, scenario := range scenarios {
			line := fmt.Sprintf("%-20s", scenario)
			for _, setup := range setups {
				line += fmt.Sprintf("  %-30s", spread(values(runs[setup], scenario, figure.value)))
			}
			fmt.Fprintln(out, strings.TrimRight(line, " "))
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out, "load average (1, 5, 15 min) at the start of each run:")
	for _, setup := range setups {
		var loads []string
		for _, r := range runs[setup] {
			fields := strings.Fields(r.Environment.LoadAverage)
			loads = append(loads, strings.Join(fields[:min(3, len(fields))], " "))
		}
		fmt.Fprintf(out, "  %-30s %s\n", setup, strings.Join(loads, "; "))
	}
}

// values returns the figure of every occurrence of scenario in runs.
func values(runs []Report, scenario string, value func(Record) float64) []float64 {
	var out []float64
	for _, r := range runs {
		for _, rec := range r.Scenarios {
			if rec.Scenario == scenario {
				out = append(out, value(rec))
			}
		}
	}
	return out
}

// spread formats the median and the range of vs, "–" when there are none.
func spread(vs []float64) string {
	if len(vs) == 0 {
		return "–"
	}
	slices.Sort(vs)
	median := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		median = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	format := func(v float64) string {
		if v >= 100 {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%s [%s–%s]", format(median), format(vs[0]), format(vs[len(vs)-1]))
}
