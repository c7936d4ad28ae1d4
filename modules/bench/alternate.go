package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// alternates says whether scenario is one of those that load the same
// requests on different handlers, which runAlternating runs.
func alternates(scenario string) bool {
	return scenario == "baseline" || scenario == "write" || scenario == "write-precondition"
}

// alternatingGroup returns the scenarios at the start of scenarios that
// alternate, none if the first does not.
func alternatingGroup(scenarios []string) []string {
	n := 0
	for n < len(scenarios) && alternates(scenarios[n]) {
		n++
	}
	return scenarios[:n]
}

// runAlternating runs scenarios of the kind alternates says in
// opts.Slices rounds of Duration/Slices each, one slice of every scenario
// per round, so that a change of the machine's load hits them alike, then
// records each as one scenario. With one slice they run back to back. With
// the baseline among them, a share of its slice runs before each of the
// others, so that each starts after the same pause of the service (whose
// flushes and compactions catch up meanwhile) instead of inheriting the
// work the scenario before it left; their order turns from round to round.
func (r *runner) runAlternating(scenarios []string) error {
	var baseline *Server
	if slices.Contains(scenarios, "baseline") {
		var err error
		if baseline, err = StartBaseline(r.opts.Binary, r.target.Token); err != nil {
			return err
		}
		defer baseline.Stop()
		if r.server == nil {
			fmt.Fprintln(r.out, "baseline: served on this machine, not by the service at --url")
		}
	}
	var served []int // the indexes of the scenarios other than the baseline
	for i, scenario := range scenarios {
		if scenario != "baseline" {
			served = append(served, i)
		}
	}
	rounds := max(1, r.opts.Slices)
	slice := r.opts.Duration / time.Duration(rounds)
	results := make([]Result, len(scenarios))
	used := make([]*Usage, len(scenarios))
	run := func(i int, d time.Duration) {
		proc, load := r.loader(scenarios[i], baseline)
		res, u := r.sample(proc, func() Result { return load(d) })
		results[i], used[i] = results[i].merge(res), used[i].add(u)
	}
	for round := 0; round < rounds; round++ {
		if len(served) == 0 { // the baseline alone
			run(0, slice)
			continue
		}
		for k := range served {
			i := served[(k+round)%len(served)]
			if baseline != nil {
				run(slices.Index(scenarios, "baseline"), slice/time.Duration(len(served)))
			}
			run(i, slice)
		}
	}
	if rounds > 1 {
		fmt.Fprintf(r.out, "%s alternated in %d slices of %s\n", strings.Join(scenarios, ", "), rounds, slice)
	}
	for i, scenario := range scenarios {
		slices.Sort(results[i].Latencies)
		r.record(scenario, results[i], used[i])
	}
	return nil
}

// loader returns the process that scenario loads and its load for a
// duration: the same clients and requests, on the baseline, on the server
// or on the server with preconditions.
func (r *runner) loader(scenario string, baseline *Server) (*Server, func(time.Duration) Result) {
	clients := r.opts.Clients
	switch scenario {
	case "baseline":
		return baseline, func(d time.Duration) Result {
			return baseline.Target.Write(r.ctx, fmt.Sprintf("baseline 1/request x%d", clients), EventType, clients, 1, d)
		}
	case "write-precondition":
		return r.server, func(d time.Duration) Result {
			return r.target.WritePrecondition(r.ctx, fmt.Sprintf("precondition 1/request x%d", clients), clients, d)
		}
	default:
		return r.server, func(d time.Duration) Result {
			return r.target.Write(r.ctx, fmt.Sprintf("write 1/request x%d", clients), EventType, clients, 1, d)
		}
	}
}

// merge adds o, a slice of the same scenario, to res; the latencies are
// left unsorted.
func (res Result) merge(o Result) Result {
	res.Name = o.Name
	res.Requests += o.Requests
	res.Events += o.Events
	res.Errors += o.Errors
	res.Elapsed += o.Elapsed
	res.Latencies = append(res.Latencies, o.Latencies...)
	return res
}

// add adds o, the usage over another slice, to u (nil: no slice yet): CPU
// summed, memory the latest and the highest; nil when o is unknown.
func (u *Usage) add(o *Usage) *Usage {
	if o == nil {
		return nil
	}
	if u == nil {
		return o
	}
	return &Usage{CPU: u.CPU + o.CPU, RSS: o.RSS, PeakRSS: max(u.PeakRSS, o.PeakRSS)}
}
