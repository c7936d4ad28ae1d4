package health

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/metrics"
)

func fixedCheck(key string, o Observation) Check {
	return Check{Key: key, ComponentType: "datastore", Observe: func(context.Context) Observation { return o }}
}

func TestReport(t *testing.T) {
	shutting := false
	r := NewReporter([]Check{
		fixedCheck("storage:writable", Observation{Value: true, Status: Pass}),
		fixedCheck("storage:size", Observation{Value: 4096, Unit: "bytes", Status: Pass}),
		NewUptimeCheck(time.Now().Add(-90 * time.Second)),
	}, "1.0.0", func() string { return "7c1f0d0e-6a53-4a5e-9b8e-2f3d4c5b6a79" }, func() bool { return shutting })
	r.now = func() time.Time { return time.Date(2026, 11, 22, 10, 15, 30, 123456789, time.UTC) }

	raw, err := json.Marshal(r.Report(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^\{"status":"pass","version":"1","releaseId":"1\.0\.0","serviceId":"7c1f0d0e-6a53-4a5e-9b8e-2f3d4c5b6a79","description":"eventstore event-sourcing database","checks":\{"storage:size":\[\{"componentType":"datastore","observedValue":4096,"observedUnit":"bytes","status":"pass","time":"2026-11-22T10:15:30\.123456789Z"\}\],"storage:writable":\[\{"componentType":"datastore","observedValue":true,"status":"pass","time":"2026-11-22T10:15:30\.123456789Z"\}\],"uptime":\[\{"componentType":"system","observedValue":90\.\d+,"observedUnit":"s","status":"pass","time":"2026-11-22T10:15:30\.123456789Z"\}\]\},"links":\{"metrics":"/api/v1/health\?format=openmetrics","self":"/api/v1/health"\}\}$`)
	if !want.Match(raw) {
		t.Fatalf("unexpected report:\n%s", raw)
	}

	shutting = true
	report := r.Report(context.Background())
	if report.Status != Fail || report.Output != "shutting down" || report.Status.HTTPStatus() != 503 {
		t.Fatalf("while shutting down: %s %q", report.Status, report.Output)
	}
}

func TestWorstStatusWins(t *testing.T) {
	r := NewReporter([]Check{
		fixedCheck("a", Observation{Value: 1, Status: Pass}),
		fixedCheck("storage:writable", Observation{Value: false, Status: Fail, Output: "storage not writable"}),
		fixedCheck("c", Observation{Value: 1, Status: Warn, Output: "meh"}),
	}, "dev", func() string { return "" }, func() bool { return false })
	report := r.Report(context.Background())
	if report.Status != Fail || report.Output != "storage not writable" {
		t.Fatalf("got %s %q", report.Status, report.Output)
	}
	if e := report.Checks["storage:writable"][0]; e.Output != "storage not writable" || e.Status != Fail {
		t.Fatalf("failing entry: %+v", e)
	}
}

func TestRouteFormats(t *testing.T) {
	reg, err := metrics.NewRegistry(config.Build{Version: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	route := NewRoute(NewReporter(nil, "dev", func() string { return "id" }, func() bool { return false }), metrics.NewExposition(reg))
	cases := []struct {
		query, accept string
		status        int
		contentType   string
	}{
		{"", "", 200, "application/health+json"},
		{"?format=", "", 200, "application/health+json"},
		{"?format=rfc", "", 200, "application/health+json"},
		{"?format=rfc", "application/openmetrics-text;version=1.0.0", 200, "application/health+json"},
		{"?format=openmetrics", "", 200, "application/openmetrics-text"},
		{"", "application/openmetrics-text;version=1.0.0", 200, "application/openmetrics-text"},
		{"?format=xml", "", 400, "text/plain; charset=utf-8"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", Path+tc.query, nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		route.Handler.ServeHTTP(rec, r)
		ct := rec.Header().Get("Content-Type")
		if rec.Code != tc.status || len(ct) < len(tc.contentType) || ct[:len(tc.contentType)] != tc.contentType {
			t.Errorf("%q (Accept %q): got %d %q, want %d %q", tc.query, tc.accept, rec.Code, ct, tc.status, tc.contentType)
		}
		if tc.status == 400 && rec.Body.String() != "invalid request: unknown format 'xml', expected 'rfc' or 'openmetrics'\n" {
			t.Errorf("400 body %q", rec.Body.String())
		}
	}
}
