package metrics

import (
	"io"
	"mime"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventstore-service/eventstore/modules/config"
)

func TestRegistryAndHTTPMetrics(t *testing.T) {
	reg, err := NewRegistry(config.Build{Version: "1.2.3", Revision: "abc", GoVersion: "go1.26"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe("/api/v1/ping", "GET", 200, 3*time.Millisecond)
	m.Observe("/api/v1/ping", "GET", 200, time.Millisecond)
	m.Observe("none", "BREW", 404, time.Millisecond)

	want := `
# HELP eventstore_http_requests_total HTTP requests by route template, method and status code.
# TYPE eventstore_http_requests_total counter
eventstore_http_requests_total{code="200",method="GET",route="/api/v1/ping"} 2
eventstore_http_requests_total{code="404",method="other",route="none"} 1
# HELP eventstore_build_info Build metadata of the running binary; always 1.
# TYPE eventstore_build_info gauge
eventstore_build_info{goversion="go1.26",revision="abc",version="1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "eventstore_http_requests_total", "eventstore_build_info"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Fatalf("duration series: %d, want 2 (one per route)", n)
	}
}

func TestServeOpenMetrics(t *testing.T) {
	reg, err := NewRegistry(config.Build{Version: "dev", Revision: "unknown", GoVersion: "go1.26"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/health?format=openmetrics", nil)
	r.Header.Set("Accept", "application/json")
	NewExposition(reg).ServeOpenMetrics(rec, r, Hide{})

	mediaType, params, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if err != nil || mediaType != "application/openmetrics-text" || params["version"] != "1.0.0" || params["charset"] != "utf-8" {
		t.Fatalf("Content-Type %q", rec.Header().Get("Content-Type"))
	}
	body, _ := io.ReadAll(rec.Body)
	if !strings.HasSuffix(string(body), "# EOF\n") || !strings.Contains(string(body), "eventstore_build_info{") {
		t.Fatalf("body is not OpenMetrics with build info:\n%s", body)
	}
	if strings.Contains(string(body), "_created") {
		t.Fatalf("body has _created series")
	}
}

func TestIsScrape(t *testing.T) {
	cases := []struct {
		accept string
		want   bool
	}{
		{"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", true},
		{"text/plain;version=0.0.4", true},
		{"application/openmetrics-text", true},
		{"text/plain", false},
		{"application/json", false},
		{"application/health+json, */*", false},
		{"", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/api/v1/health", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := IsScrape(r); got != tc.want {
			t.Errorf("IsScrape(%q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

// TestExpositionHides: the series whose label Hide names has a value it
// refuses are left out, and a family left without series with them.
func TestExpositionHides(t *testing.T) {
	reg := prometheus.NewRegistry()
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lag", Help: "Lag."}, []string{"subscription"})
	only := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "only_hidden", Help: "Hidden."}, []string{"subscription"})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "other", Help: "Other."})
	reg.MustRegister(lag, only, other)
	lag.WithLabelValues("billing").Set(1)
	lag.WithLabelValues("shipping").Set(2)
	only.WithLabelValues("shipping").Set(3)
	e := NewExposition(reg)
	for _, c := range []struct {
		hide Hide
		want []string
		not  []string
	}{
		{Hide{}, []string{`lag{subscription="billing"} 1`, `lag{subscription="shipping"} 2`, "only_hidden", "other 0"}, nil},
		{Hide{Label: "subscription", Shown: func(v string) bool { return v == "billing" }},
			[]string{`lag{subscription="billing"} 1`, "other 0"}, []string{"shipping", "only_hidden"}},
	} {
		w := httptest.NewRecorder()
		e.ServeOpenMetrics(w, httptest.NewRequest("GET", "/api/v1/health?format=openmetrics", nil), c.hide)
		body := w.Body.String()
		for _, s := range c.want {
			if !strings.Contains(body, s) {
				t.Errorf("without %q:\n%s", s, body)
			}
		}
		for _, s := range c.not {
			if strings.Contains(body, s) {
				t.Errorf("with %q:\n%s", s, body)
			}
		}
	}
}
