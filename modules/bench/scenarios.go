package bench

import (
	"fmt"
	"time"
)

// prefill writes opts.Prefill events before the scenarios and prints how
// long it took and the server's memory after it.
func (r *runner) prefill() error {
	n := r.opts.Prefill
	start := time.Now()
	if err := r.target.Prefill(r.ctx, n); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	elapsed := time.Since(start)
	fmt.Fprintf(r.out, "prefill: %d events on %d subjects in %.1f s (%.0f events/s, not a scenario)", n, PrefillSubjects(n), elapsed.Seconds(), float64(n)/elapsed.Seconds())
	if r.server != nil {
		if u, err := r.server.Usage(); err == nil {
			fmt.Fprintf(r.out, "; server RSS %d MiB, peak %d MiB", u.RSS>>20, u.PeakRSS>>20)
		}
	}
	fmt.Fprintln(r.out)
	return nil
}

// runQuery runs the query scenario: an indexed EventQL selection of 1% of
// the events against read-events of the same events, and a full-scan
// COUNT() over the whole store.
func (r *runner) runQuery() error {
	n := r.opts.QueryEvents
	prefix := fmt.Sprintf("/bench/query/%d", time.Now().UnixNano())
	if err := r.target.FillMixed(r.ctx, prefix, n); err != nil {
		return err
	}
	const rounds = 5
	selected := r.measure("query-type", r.server, func() Result {
		return r.target.Query(r.ctx, fmt.Sprintf("query type == (%d of %d)", n/100, n),
			fmt.Sprintf("FROM e IN events WHERE e.type == %q PROJECT INTO e", RareEventType), rounds)
	})
	read := r.measure("query-read", r.server, func() Result {
		return r.target.Read(r.ctx, fmt.Sprintf("read-events same %d", n/100), prefix+"/rare", rounds)
	})
	fmt.Fprintf(r.out, "%-28s indexed query at %.2fx the speed of read-events\n", "", selected.EventsPerSecond/read.EventsPerSecond)
	total, err := r.target.Count(r.ctx)
	if err != nil {
		return err
	}
	r.measure("query-count", r.server, func() Result {
		count := r.target.Query(r.ctx, fmt.Sprintf("query COUNT() of %d", total), "FROM e IN events PROJECT INTO COUNT()", rounds)
		count.Events = total * count.Requests // every event is scanned
		return count
	})
	return nil
}

// runObserve runs the observe scenario and, when bench started the server,
// prints its CPU and memory per observer.
func (r *runner) runObserve() error {
	observers := r.opts.Observers
	before := r.begin(r.server)
	var open Usage
	res, err := r.target.Observe(r.ctx, observers, r.opts.ObserveRate, r.opts.Duration, func() {
		if r.server != nil {
			open, _ = r.server.Usage()
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(r.out, res)
	rec := Record{
		Scenario: "observe", Name: res.Name(),
		EventsPerSecond: float64(res.Written) / res.Elapsed.Seconds(), RequestsPerSecond: float64(res.Written) / res.Elapsed.Seconds(),
		Events: int64(res.Written), Requests: int64(res.Written), Errors: res.Missing, Deliveries: res.Delivered, ElapsedSeconds: res.Elapsed.Seconds(),
		LatencyP50Ms: ms(res.Percentile(50)), LatencyP99Ms: ms(res.Percentile(99)), LatencyMaxMs: ms(res.Percentile(100)),
	}
	if used := r.end(r.server, open); used != nil {
		rec.addUsage(*used)
		cpu := used.CPU
		fmt.Fprintf(r.out, "%-28s server CPU %6.2f s (%4.1f%% of one core; %.2f%% per observer), RSS +%.1f MiB for %d observers (%.0f KiB each)\n", "",
			cpu.Seconds(), 100*cpu.Seconds()/res.Elapsed.Seconds(), 100*cpu.Seconds()/res.Elapsed.Seconds()/float64(observers),
			float64(open.RSS-before.RSS)/(1<<20), observers, float64(open.RSS-before.RSS)/1024/float64(observers))
	}
	r.report.Scenarios = append(r.report.Scenarios, rec)
	return nil
}
