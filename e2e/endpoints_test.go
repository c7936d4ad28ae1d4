package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

var managementEvent = regexp.MustCompile(`^\{"specversion":"1\.0","id":"([0-9a-f-]{36})","time":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{8}[1-9]Z)","source":"https://github\.com/eventstore-service/eventstore","subject":"([^"]*)","type":"([^"]*)","datacontenttype":"application/json","data":(.*)\}$`)

// checkManagementEvent asserts a management event of exactly the eight keys
// in order, and returns its subject, type and data.
func checkManagementEvent(t *testing.T, body []byte) (subject, eventType, data string) {
	t.Helper()
	m := managementEvent.FindStringSubmatch(strings.TrimSuffix(string(body), "\n"))
	if m == nil {
		t.Fatalf("not a management event of the eight keys in order: %s", body)
	}
	if id, err := uuid.Parse(m[1]); err != nil || id.Version() != 4 {
		t.Fatalf("id %q is not a UUID v4", m[1])
	}
	if ts, err := time.Parse(time.RFC3339Nano, m[2]); err != nil || time.Since(ts) > time.Minute || time.Since(ts) < -time.Minute {
		t.Fatalf("time %q is not a current RFC 3339 time", m[2])
	}
	return m[3], m[4], m[5]
}

// checkCommonHeaders asserts the headers every response carries.
// noStore is the Cache-Control value of every /api/ response (docs/api.md §1.3).
const noStore = "no-store, no-cache, must-revalidate, proxy-revalidate"

func checkCommonHeaders(t *testing.T, r harness.Response) {
	t.Helper()
	if strings.HasPrefix(r.Request.URL.Path, "/api/") && (r.Header.Get("Cache-Control") != noStore || r.Header.Get("Expires") != "0" || r.Header.Get("Surrogate-Control") != "no-store") {
		t.Errorf("%s %s: cache headers %q %q %q", r.Request.Method, r.Request.URL.Path, r.Header.Get("Cache-Control"), r.Header.Get("Expires"), r.Header.Get("Surrogate-Control"))
	}
	if got := r.Header.Get("Server"); !strings.HasPrefix(got, "EventSourcingDB/1 eventstore/") {
		t.Errorf("%s %s: Server header %q", r.Request.Method, r.Request.URL.Path, got)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s %s: no X-Content-Type-Options: nosniff", r.Request.Method, r.Request.URL.Path)
	}
}

// checkError asserts a plain-text error response.
func checkError(t *testing.T, r harness.Response, status int, body string) {
	t.Helper()
	checkCommonHeaders(t, r)
	if r.StatusCode != status || string(r.Body) != body+"\n" {
		t.Fatalf("%s %s: got %d %q, want %d %q", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body, status, body+"\n")
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Fatalf("error Content-Type %q", ct)
	}
}

func TestPing(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	for _, token := range []string{"", harness.Token, "wrong-token"} {
		r := inst.Do("GET", "/api/v1/ping", token, "")
		checkCommonHeaders(t, r)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Cache-Control") != noStore {
			t.Fatalf("ping with token %q: %d %q %q", token, r.StatusCode, r.Header.Get("Content-Type"), r.Header.Get("Cache-Control"))
		}
		subject, eventType, data := checkManagementEvent(t, r.Body)
		if subject != "/api/v1/ping" || eventType != "io.eventsourcingdb.api.ping-received" || data != `{"message":"pong"}` {
			t.Fatalf("ping event: %s %s %s", subject, eventType, data)
		}
	}
	a, b := inst.Do("GET", "/api/v1/ping", "", ""), inst.Do("GET", "/api/v1/ping", "", "")
	if bytes.Equal(a.Body[:60], b.Body[:60]) {
		t.Fatalf("two pings share an id: %s", a.Body)
	}
	checkError(t, inst.Do("POST", "/api/v1/ping", "", ""), 405, "method not allowed: use GET")

	// The PHP SDK's own test reads the raw lines of the answer: the status
	// line, Cache-Control, Content-Type, and at least 8 lines before the body.
	conn := dialRaw(t, inst)
	if _, err := io.WriteString(conn, "GET /api/v1/ping HTTP/1.1\r\nHost: eventstore\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(conn)
	head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	lines := strings.Split(head, "\r\n")
	if err != nil || len(lines) < 8 || lines[0] != "HTTP/1.1 200 OK" || lines[1] != "Cache-Control: "+noStore || lines[2] != "Content-Type: application/json" {
		t.Fatalf("raw ping answer (%v): %q", err, head)
	}
}

func TestVerifyAPIToken(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	for _, body := range []string{"", `""`, "{}", "null", "not json at all"} {
		r := inst.Do("POST", "/api/v1/verify-api-token", harness.Token, body)
		checkCommonHeaders(t, r)
		if r.StatusCode != 200 {
			t.Fatalf("verify with body %q: %d %s", body, r.StatusCode, r.Body)
		}
		subject, eventType, data := checkManagementEvent(t, r.Body)
		if subject != "/api/v1/verify-api-token" || eventType != "io.eventsourcingdb.api.api-token-verified" || data != "{}" {
			t.Fatalf("verify event: %s %s %s", subject, eventType, data)
		}
	}

	missing := inst.Do("POST", "/api/v1/verify-api-token", "", "")
	checkError(t, missing, 401, "unauthorized")
	if got := missing.Header.Get("WWW-Authenticate"); got != `Bearer realm="eventstore"` {
		t.Fatalf("WWW-Authenticate without a token: %q", got)
	}
	wrong := inst.Do("POST", "/api/v1/verify-api-token", "wrong-token", "")
	checkError(t, wrong, 401, "unauthorized")
	if got := wrong.Header.Get("WWW-Authenticate"); got != `Bearer realm="eventstore", error="invalid_token"` {
		t.Fatalf("WWW-Authenticate with a wrong token: %q", got)
	}
	checkError(t, inst.Do("POST", "/api/v1/verify-api-token?token="+harness.Token, "", ""), 401, "unauthorized")
	checkError(t, inst.Do("POST", "/api/v1/verify-api-token", "", "", "Cookie", "token="+harness.Token), 401, "unauthorized")
	checkError(t, inst.Do("GET", "/api/v1/verify-api-token", "", ""), 401, "unauthorized")
	checkError(t, inst.Do("GET", "/api/v1/verify-api-token", harness.Token, ""), 405, "method not allowed: use POST")
}

func TestHealth(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	for _, query := range []string{"", "?format=rfc", "?format="} {
		r := inst.Do("GET", "/api/v1/health"+query, harness.Token, "")
		checkCommonHeaders(t, r)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/health+json" || r.Header.Get("Cache-Control") != noStore {
			t.Fatalf("health%s: %d %q %q", query, r.StatusCode, r.Header.Get("Content-Type"), r.Header.Get("Cache-Control"))
		}
		var report struct {
			Status      string                      `json:"status"`
			Version     string                      `json:"version"`
			ReleaseID   string                      `json:"releaseId"`
			ServiceID   string                      `json:"serviceId"`
			Description string                      `json:"description"`
			Checks      map[string][]map[string]any `json:"checks"`
			Links       map[string]string           `json:"links"`
		}
		if err := json.Unmarshal(r.Body, &report); err != nil {
			t.Fatalf("health body: %v: %s", err, r.Body)
		}
		if report.Status != "pass" || report.Version != "1" || report.ReleaseID == "" || report.Description != "eventstore event-sourcing database" {
			t.Fatalf("health report: %s", r.Body)
		}
		if _, err := uuid.Parse(report.ServiceID); err != nil {
			t.Fatalf("serviceId %q", report.ServiceID)
		}
		uptime := report.Checks["uptime"]
		if len(uptime) != 1 || uptime[0]["componentType"] != "system" || uptime[0]["observedUnit"] != "s" || uptime[0]["status"] != "pass" {
			t.Fatalf("uptime check: %v", uptime)
		}
		if v, ok := uptime[0]["observedValue"].(float64); !ok || v <= 0 || v > 600 {
			t.Fatalf("uptime observedValue %v", uptime[0]["observedValue"])
		}
		if report.Links["self"] != "/api/v1/health" || report.Links["metrics"] != "/api/v1/health?format=openmetrics" {
			t.Fatalf("links %v", report.Links)
		}
	}

	missing := inst.Do("GET", "/api/v1/health", "", "")
	checkError(t, missing, 401, "unauthorized")
	checkError(t, inst.Do("GET", "/api/v1/health?format=openmetrics", "wrong", ""), 401, "unauthorized")
	checkError(t, inst.Do("GET", "/api/v1/health?format=xml", harness.Token, ""), 400,
		"invalid request: unknown format 'xml', expected 'rfc' or 'openmetrics'")
	checkError(t, inst.Do("POST", "/api/v1/health", harness.Token, ""), 405, "method not allowed: use GET")
}

func TestHealthOpenMetrics(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	inst.Do("GET", "/api/v1/ping", "", "")
	inst.Do("GET", "/api/v1/health", "wrong", "")
	inst.Do("GET", "/api/v1/nope/123", harness.Token, "")

	for name, request := range map[string][]string{
		"format parameter":   {"/api/v1/health?format=openmetrics"},
		"scrape negotiation": {"/api/v1/health", "Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=0.0.4;q=0.3,*/*;q=0.1"},
		"forced over Accept": {"/api/v1/health?format=openmetrics", "Accept", "text/plain"},
	} {
		t.Run(name, func(t *testing.T) {
			r := inst.Do("GET", request[0], harness.Token, "", request[1:]...)
			checkCommonHeaders(t, r)
			mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if r.StatusCode != 200 || err != nil || mediaType != "application/openmetrics-text" || params["version"] != "1.0.0" || params["charset"] != "utf-8" {
				t.Fatalf("got %d %q", r.StatusCode, r.Header.Get("Content-Type"))
			}
			if !bytes.HasSuffix(r.Body, []byte("# EOF\n")) {
				t.Fatalf("body does not end in # EOF:\n%s", r.Body)
			}
			samples := parseOpenMetrics(t, r.Body, r.Header.Get("Content-Type"))
			for _, want := range []string{
				`eventstore_build_info{goversion=`,
				`eventstore_http_requests_total{code="200",method="GET",route="/api/v1/ping"}`,
				`eventstore_http_requests_total{code="401",method="GET",route="/api/v1/health"}`,
				`eventstore_http_requests_total{code="404",method="GET",route="none"}`,
				`eventstore_auth_failures_total`,
				`process_start_time_seconds`,
				`go_goroutines`,
			} {
				if !hasSample(samples, want) {
					t.Errorf("no sample %s among %d samples", want, len(samples))
				}
			}
			for s := range samples {
				if strings.Contains(s, "_created") || strings.Contains(s, "/api/v1/nope/123") {
					t.Errorf("unexpected series %s", s)
				}
			}
		})
	}
}

// parseOpenMetrics parses body with Prometheus's own parser and returns its
// samples by series text.
func parseOpenMetrics(t *testing.T, body []byte, contentType string) map[string]float64 {
	t.Helper()
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		t.Fatalf("parser for %q: %v", contentType, err)
	}
	if _, ok := p.(*textparse.OpenMetricsParser); !ok {
		t.Fatalf("Content-Type %q did not select the OpenMetrics parser (got %T)", contentType, p)
	}
	samples := map[string]float64{}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return samples
		}
		if err != nil {
			t.Fatalf("OpenMetrics parse error: %v\n%s", err, body)
		}
		if entry == textparse.EntrySeries {
			var lset labels.Labels
			p.Labels(&lset)
			_, _, v := p.Series()
			samples[seriesText(lset)] = v
		}
	}
}

func seriesText(lset labels.Labels) string {
	var b strings.Builder
	b.WriteString(lset.Get(model.MetricNameLabel))
	first := true
	lset.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		if first {
			b.WriteString("{")
			first = false
		} else {
			b.WriteString(",")
		}
		b.WriteString(l.Name + `="` + l.Value + `"`)
	})
	if !first {
		b.WriteString("}")
	}
	return b.String()
}

func hasSample(samples map[string]float64, prefix string) bool {
	for s := range samples {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func TestUIOnlyWithFlag(t *testing.T) {
	without := harness.Start(t, bin, harness.Dev()...)
	checkError(t, without.Do("GET", "/", "", ""), 404, "not found: unknown route")
	checkError(t, without.Do("GET", "/app.js", "", ""), 404, "not found: unknown route")

	with := harness.Start(t, bin, harness.Dev("--with-ui")...)
	page := with.Do("GET", "/", "", "")
	checkCommonHeaders(t, page)
	if page.StatusCode != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") || !bytes.Contains(page.Body, []byte("<title>eventstore</title>")) {
		t.Fatalf("UI page: %d %q\n%s", page.StatusCode, page.Header.Get("Content-Type"), page.Body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
		t.Fatalf("UI CSP %q", csp)
	}
	for _, asset := range regexp.MustCompile(`(?:src|href)="(/[^"]+)"`).FindAllStringSubmatch(string(page.Body), -1) {
		r := with.Do("GET", asset[1], "", "")
		checkCommonHeaders(t, r)
		if r.StatusCode != 200 || len(r.Body) == 0 {
			t.Errorf("UI asset %s: %d", asset[1], r.StatusCode)
		}
	}
	checkError(t, with.Do("GET", "/api/v1/nope", "", ""), 401, "unauthorized")
	checkError(t, with.Do("GET", "/nope.js", "", ""), 404, "not found: unknown route")
	checkError(t, with.Do("POST", "/", "", ""), 405, "method not allowed: use GET")
}

func TestHTTP2PriorKnowledge(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	inst.Client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: protocols}}
	r := inst.Do("GET", "/api/v1/ping", "", "")
	if r.StatusCode != 200 || r.ProtoMajor != 2 {
		t.Fatalf("h2c ping: %d over %s", r.StatusCode, r.Proto)
	}
	checkCommonHeaders(t, r)
}
