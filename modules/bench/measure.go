package bench

import (
	"fmt"
	"time"
)

// measure runs one scenario, reading the usage of proc (the server or the
// baseline; nil when unknown) around it, then prints and records its
// figures.
func (r *runner) measure(scenario string, proc *Server, run func() Result) Record {
	res, used := r.sample(proc, run)
	return r.record(scenario, res, used)
}

// sample runs run between begin and end.
func (r *runner) sample(proc *Server, run func() Result) (Result, *Usage) {
	before := r.begin(proc)
	res := run()
	return res, r.end(proc, before)
}

// record prints and records the figures of a scenario and what its process
// used (nil: unknown), relates them to the baseline and write-precondition
// to write, and notes them for those that follow.
func (r *runner) record(scenario string, res Result, used *Usage) Record {
	rec := newRecord(scenario, res)
	line := res.String()
	if isRequestScenario(scenario) && r.baseline > 0 {
		rec.BaselineRatio = rec.RequestsPerSecond / r.baseline
		line += fmt.Sprintf("  (%.0f%% of baseline)", 100*rec.BaselineRatio)
	}
	fmt.Fprintln(r.out, line)
	if used != nil && res.Events > 0 {
		rec.addUsage(*used)
		fmt.Fprintf(r.out, "%-28s server CPU %6.2f s (%5.1f µs/event, %3.0f%% of one core), RSS %4d MiB, peak %4d MiB\n", "",
			rec.ServerCPUSeconds, rec.ServerCPUPerEventMicros, 100*rec.ServerCPUSeconds/res.Elapsed.Seconds(), used.RSS>>20, used.PeakRSS>>20)
	}
	r.report.Scenarios = append(r.report.Scenarios, rec)
	switch scenario {
	case "baseline":
		r.baseline = rec.RequestsPerSecond
	case "write":
		r.write = rec
	case "write-precondition":
		r.precondition = rec
	}
	if (scenario == "write" || scenario == "write-precondition") && r.write.Events > 0 && r.precondition.Events > 0 {
		fmt.Fprintf(r.out, "%-28s write-precondition / write: %.2f", "", r.precondition.EventsPerSecond/r.write.EventsPerSecond)
		if r.write.ServerCPUPerEventMicros > 0 {
			fmt.Fprintf(r.out, " (server CPU per event %.2fx)", r.precondition.ServerCPUPerEventMicros/r.write.ServerCPUPerEventMicros)
		}
		fmt.Fprintln(r.out)
	}
	return rec
}

// isRequestScenario says whether scenario's requests have the shape of
// the baseline's (one event each), so that their rates compare.
func isRequestScenario(scenario string) bool {
	return scenario == "write" || scenario == "write-precondition"
}

// begin waits for the server to idle, then starts measuring proc's usage:
// it notes the server's peak so far, starts a new peak and returns the
// usage now.
func (r *runner) begin(proc *Server) Usage {
	r.settle()
	if proc == nil {
		return Usage{}
	}
	r.notePeak()
	_ = proc.ResetPeak() // where it fails, the peak is that since the start
	before, _ := proc.Usage()
	return before
}

// end reads proc's usage: the CPU it used since before and its memory
// now; nil when unknown.
func (r *runner) end(proc *Server, before Usage) *Usage {
	if proc == nil {
		return nil
	}
	r.notePeak()
	after, err := proc.Usage()
	if err != nil {
		return nil
	}
	after.CPU -= before.CPU
	return &after
}

// settle waits until the server bench started idles, so that what an
// earlier fill or scenario left to do (flushes, compactions) does not slow
// the next scenario; it says so when that took a while.
func (r *runner) settle() {
	if r.server == nil {
		return
	}
	const window = time.Second
	waited, err := r.server.Settle(0.05, window, 2*time.Minute)
	switch {
	case err != nil:
		fmt.Fprintf(r.out, "server busy before the next scenario: %v\n", err)
	case waited > 5*window/2:
		fmt.Fprintf(r.out, "waited %.0f s for the server to idle (flushes, compactions)\n", waited.Seconds())
	}
}

// notePeak raises the run's peak RSS to the server's peak so far.
func (r *runner) notePeak() {
	if r.server == nil {
		return
	}
	if u, err := r.server.Usage(); err == nil {
		r.report.ServerPeakRSSBytes = max(r.report.ServerPeakRSSBytes, u.PeakRSS)
	}
}

// finish relates the scenarios run before the baseline to it and prints
// the server's peak memory over the run.
func (r *runner) finish() {
	for i, rec := range r.report.Scenarios {
		if isRequestScenario(rec.Scenario) && rec.BaselineRatio == 0 && r.baseline > 0 {
			r.report.Scenarios[i].BaselineRatio = rec.RequestsPerSecond / r.baseline
		}
	}
	if r.server != nil {
		r.notePeak()
		fmt.Fprintf(r.out, "server peak RSS over the run: %d MiB\n", r.report.ServerPeakRSSBytes>>20)
	}
}
