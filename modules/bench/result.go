package bench

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Result is the outcome of one scenario.
type Result struct {
	Name     string
	Requests int64
	Events   int64
	Errors   int64
	// Failures, where a scenario tells them apart, count Errors by kind:
	// the route and the answer, or what went wrong.
	Failures  map[string]int64
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
	for _, kind := range slices.Sorted(maps.Keys(r.Failures)) {
		line += fmt.Sprintf("\n%-28s %d × %s", "", r.Failures[kind], kind)
	}
	if r.HeapPeak > 0 {
		line += fmt.Sprintf("\n%-28s server Go heap in use: %.1f MiB before, at most %.1f MiB while reading", "",
			float64(r.HeapBefore)/(1<<20), float64(r.HeapPeak)/(1<<20))
	}
	return line
}

// failures counts the failures of a scenario by kind; safe for concurrent
// use.
type failures struct {
	mu    sync.Mutex
	kinds map[string]int64
	n     int64
}

// add counts one failure of kind.
func (f *failures) add(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kinds == nil {
		f.kinds = map[string]int64{}
	}
	f.kinds[kind]++
	f.n++
}

// addErr counts err, a failed call of path, by its kind: the answer's
// status and the start of its message, or the transport's error.
func (f *failures) addErr(path string, err error) {
	msg := err.Error()
	var uerr *url.Error
	if errors.As(err, &uerr) {
		msg = path + ": " + uerr.Err.Error()
	}
	if len(msg) > 100 {
		msg = msg[:100] + "…"
	}
	f.add(strings.TrimSpace(msg))
}

// count returns the failures counted and their kinds.
func (f *failures) count() (int64, map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, maps.Clone(f.kinds)
}
