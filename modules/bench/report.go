package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// ReportFormat names the layout of Report; ReadReport refuses others.
const ReportFormat = "eventstore-bench/1"

// Report is the machine-readable record of a bench run (bench --json).
type Report struct {
	Format      string      `json:"format"`
	Environment Environment `json:"environment"`
	Scenarios   []Record    `json:"scenarios"`
	// ServerPeakRSSBytes is the server's highest resident set size over the
	// whole run, when bench started the server.
	ServerPeakRSSBytes int64 `json:"serverPeakRssBytes,omitempty"`
}

// Environment says what ran, where and how.
type Environment struct {
	Version    string `json:"version"`
	Revision   string `json:"revision"`
	GoVersion  string `json:"goVersion"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"numCpu"`
	CPUModel   string `json:"cpuModel,omitempty"`
	// LoadAverage is /proc/loadavg at the start: how busy the machine was.
	LoadAverage string    `json:"loadAverage,omitempty"`
	Date        time.Time `json:"date"`
	// Server is "started by bench" or the URL of the service.
	Server string `json:"server"`
	// Setup names the kind of service, by which bench summary groups
	// runs: "pebble", "postgres, 3 nodes", "running service".
	Setup string `json:"setup,omitempty"`
	// Flags are the bench flags in effect, the token left out.
	Flags map[string]string `json:"flags,omitempty"`
}

// Record is the figures of one scenario.
type Record struct {
	// Scenario is the key by which runs are compared, e.g. "write" or
	// "query-count"; Name is the label of the printed line, with the
	// scenario's parameters.
	Scenario          string  `json:"scenario"`
	Name              string  `json:"name"`
	EventsPerSecond   float64 `json:"eventsPerSecond"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	Events            int64   `json:"events"`
	Requests          int64   `json:"requests"`
	Errors            int64   `json:"errors"`
	// Failures count the errors by kind, where the scenario tells them
	// apart.
	Failures       map[string]int64 `json:"failures,omitempty"`
	ElapsedSeconds float64          `json:"elapsedSeconds"`
	// Latencies are per request, except for observe: from a write's
	// acknowledgement to an observer's receipt.
	LatencyP50Ms float64 `json:"latencyP50Ms"`
	LatencyP99Ms float64 `json:"latencyP99Ms"`
	LatencyMaxMs float64 `json:"latencyMaxMs"`
	// Deliveries counts the events the observers received (observe only).
	Deliveries int64 `json:"deliveries,omitempty"`
	// The server's figures, when bench started it (for baseline: the
	// baseline process).
	ServerCPUSeconds        float64 `json:"serverCpuSeconds,omitempty"`
	ServerCPUPerEventMicros float64 `json:"serverCpuPerEventMicros,omitempty"`
	RSSBytes                int64   `json:"rssBytes,omitempty"`
	PeakRSSBytes            int64   `json:"peakRssBytes,omitempty"`
	HeapBeforeBytes         int64   `json:"heapBeforeBytes,omitempty"`
	HeapPeakBytes           int64   `json:"heapPeakBytes,omitempty"`
	// BaselineRatio is requests/s as a fraction of the baseline's in the
	// same run (write and write-precondition only: the same requests).
	BaselineRatio float64 `json:"baselineRatio,omitempty"`
}

// newRecord returns the client-side figures of res.
func newRecord(scenario string, res Result) Record {
	return Record{
		Scenario: scenario, Name: res.Name,
		EventsPerSecond: res.EventsPerSecond(), RequestsPerSecond: res.RequestsPerSecond(),
		Events: res.Events, Requests: res.Requests, Errors: res.Errors, Failures: res.Failures, ElapsedSeconds: res.Elapsed.Seconds(),
		LatencyP50Ms: ms(res.Percentile(50)), LatencyP99Ms: ms(res.Percentile(99)), LatencyMaxMs: ms(res.Percentile(100)),
		HeapBeforeBytes: res.HeapBefore, HeapPeakBytes: res.HeapPeak,
	}
}

// addUsage adds what the scenario's process used: used.CPU over it, its
// memory at the end.
func (rec *Record) addUsage(used Usage) {
	rec.ServerCPUSeconds = used.CPU.Seconds()
	if rec.Events > 0 {
		rec.ServerCPUPerEventMicros = float64(used.CPU.Microseconds()) / float64(rec.Events)
	}
	rec.RSSBytes, rec.PeakRSSBytes = used.RSS, used.PeakRSS
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// HostEnvironment describes this machine now; the caller adds the version
// and the flags.
func HostEnvironment() Environment {
	env := Environment{GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Date: time.Now().UTC().Truncate(time.Second)}
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
				env.CPUModel = strings.TrimSpace(value)
				break
			}
		}
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		env.LoadAverage = strings.TrimSpace(string(load))
	}
	return env
}

// WriteReport writes r to path as indented JSON.
func WriteReport(path string, r Report) error {
	r.Format = ReportFormat
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// ReadReport reads a report that WriteReport wrote.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, fmt.Errorf("read the report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("read the report %s: %w", path, err)
	}
	if r.Format != ReportFormat {
		return Report{}, fmt.Errorf("read the report %s: format %q, want %q (written by eventstore bench --json)", path, r.Format, ReportFormat)
	}
	return r, nil
}
