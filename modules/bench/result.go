package bench

import (
	"fmt"
	"time"
)

// Result is the outcome of one scenario.
type Result struct {
	Name      string
	Requests  int64
	Events    int64
	Errors    int64
	Elapsed   time.Duration
	Latencies []time.Duration // sorted
	// HeapBefore and HeapPeak are the server's Go heap in use before and at
	// most during the scenario (read scenario only), in bytes.
	HeapBefore, HeapPeak int64
}

// EventsPerSecond is the event throughput.
func (r Result) EventsPerSecond() float64 { return float64(r.Events) / r.Elapsed.Seconds() }

// RequestsPerSecond is the request throughput.
func (r Result) RequestsPerSecond() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// Percentile returns the latency below which p percent of requests finished.
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.Latencies)-1) * p / 100)
	return r.Latencies[i]
}

// String formats the result as one line of figures.
func (r Result) String() string {
	line := fmt.Sprintf("%-28s %10.0f events/s %9.0f requests/s  p50 %8s  p99 %8s  errors %d",
		r.Name, r.EventsPerSecond(), r.RequestsPerSecond(),
		r.Percentile(50).Round(time.Microsecond), r.Percentile(99).Round(time.Microsecond), r.Errors)
	if r.HeapPeak > 0 {
		line += fmt.Sprintf("\n%-28s server Go heap in use: %.1f MiB before, at most %.1f MiB while reading", "",
			float64(r.HeapBefore)/(1<<20), float64(r.HeapPeak)/(1<<20))
	}
	return line
}
