package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestReportRoundTrip(t *testing.T) {
	res := Result{Name: "write 1/request x64", Requests: 200, Events: 200, Errors: 1, Elapsed: 2 * time.Second,
		Latencies: []time.Duration{time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond}}
	rec := newRecord("write", res)
	rec.ServerCPUSeconds, rec.ServerCPUPerEventMicros, rec.RSSBytes, rec.PeakRSSBytes, rec.BaselineRatio = 1.5, 7500, 100<<20, 120<<20, 0.52
	want := Report{
		Environment: Environment{Version: "v1", Revision: "abc", GoVersion: "go1.26", GOMAXPROCS: 2, NumCPU: 2, CPUModel: "Xeon",
			LoadAverage: "1.00 2.00 3.00 1/100 42", Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Server: "started by bench",
			Flags: map[string]string{"clients": "64", "scenario": "write,batch"}},
		Scenarios:          []Record{rec, {Scenario: "observe", Name: "observe x100", Deliveries: 1000, LatencyP99Ms: 1.2}},
		ServerPeakRSSBytes: 130 << 20,
	}
	if rec.EventsPerSecond != 100 || rec.RequestsPerSecond != 100 || rec.LatencyP50Ms != 2 || rec.LatencyP99Ms != 2 || rec.LatencyMaxMs != 40 {
		t.Fatalf("record figures: %+v", rec)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteReport(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	want.Format = ReportFormat
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestReadReportRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"other.json": `{"scenarios":[]}`, "broken.json": `{"format":`} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadReport(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
	if _, err := ReadReport(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file is read")
	}
}
