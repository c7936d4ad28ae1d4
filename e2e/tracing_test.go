package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// collector is an OTLP trace receiver on a loopback port, over gRPC or
// HTTP (protobuf), that keeps the spans it receives with their resources.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	endpoint string
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string // service.name of each batch's resource
	exports  int
}

// startCollector starts a receiver of protocol ("grpc" or
// "http/protobuf") and stops it when the test ends.
func startCollector(t *testing.T, protocol string) *collector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{endpoint: "http://" + ln.Addr().String()}
	if protocol == "grpc" {
		srv := grpc.NewServer()
		coltracepb.RegisterTraceServiceServer(srv, c)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(srv.Stop)
		return c
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("collector: %s %s %q: %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		c.keep(&req)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return c
}

// Export is the gRPC receiver's method.
func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.keep(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (c *collector) keep(req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exports++
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, s)
				c.services = append(c.services, service)
			}
		}
	}
}

// received returns the spans received so far and the number of exports.
func (c *collector) received() ([]*tracepb.Span, []string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans), slices.Clone(c.services), c.exports
}

// jsonString returns s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// attr returns the value of a span's attribute key, or nil.
func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// TestTracingExport: a write carrying a traceparent header produces a
// request span in that trace, with the ids of the events it wrote, and a
// commit span linked to it; a query has its EventQL span below its
// request's, as schema validation, backup, restore, verification and a
// subscription's deliveries have theirs. The spans reach the collector over gRPC and over HTTP, with
// the export delayed past the run: the shutdown flushes them. No
// attribute holds a subject, a body, the query's text or the token.
func TestTracingExport(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			c := startCollector(t, protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // nothing is exported before the shutdown
			inst := harness.Start(t, bin, harness.Dev()...)
			if got := inst.Logs("eventstore is running")[0]["tracing"]; got != "otlp "+protocol {
				t.Errorf("the start log says tracing %v", got)
			}

			traceID, parentID := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			subject := "/secret-subject/42"
			body := `{"events":[{"source":"https://e2e.example","subject":"` + subject + `","type":"io.example.traced","data":{"n":1}},` +
				`{"source":"https://e2e.example","subject":"` + subject + `","type":"io.example.traced","data":{"n":2}}]}`
			r := inst.Do("POST", "/api/v1/write-events", harness.Token, body, "traceparent", "00-"+traceID+"-"+parentID+"-01")
			if r.StatusCode != 200 {
				t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
			}
			query := `FROM e IN events WHERE e.subject == "` + subject + `" PROJECT INTO e`
			if r := inst.Do("POST", "/api/v1/run-eventql-query", harness.Token, `{"query":`+jsonString(query)+`}`); r.StatusCode != 200 {
				t.Fatalf("query: %d %s", r.StatusCode, r.Body)
			}
			// A write validated against a schema, a backup restored into a
			// second instance, a verification and a subscription's
			// deliveries: each has its span below its request's.
			if r := inst.Do("POST", "/api/v1/register-event-schema", harness.Token, `{"eventType":"io.example.checked","schema":{"type":"object","properties":{},"additionalProperties":true}}`); r.StatusCode != 200 {
				t.Fatalf("register: %d %s", r.StatusCode, r.Body)
			}
			mustWrite(t, inst, candidates(subject, "io.example.checked"))
			backup := inst.Do("POST", "/api/v1/backup", harness.Token, `{}`)
			if backup.StatusCode != 200 {
				t.Fatalf("backup: %d %s", backup.StatusCode, backup.Body)
			}
			second := harness.Start(t, bin, harness.Dev()...)
			if r := second.Do("POST", "/api/v1/restore", harness.Token, string(backup.Body)); r.StatusCode != 200 {
				t.Fatalf("restore: %d %s", r.StatusCode, r.Body)
			}
			if got := len(stream(t, inst, "/api/v1/verify-store", `{}`)); got != 1 {
				t.Fatalf("verify-store: %d lines", got)
			}
			if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, `{"subscription":"traced","subject":"/secret-subject","options":{"recursive":true}}`); r.StatusCode != 200 {
				t.Fatalf("create-subscription: %d %s", r.StatusCode, r.Body)
			}
			consumer := consume(t, inst, "traced", "w1")
			consumer.deliveries(t, 3)
			consumer.cancel()

			if _, _, exports := c.received(); exports != 0 {
				t.Fatalf("%d exports before the shutdown", exports)
			}
			for _, i := range []*harness.Instance{inst, second} {
				i.Signal(syscall.SIGTERM)
				if code := i.Wait(30 * time.Second); code != 0 {
					t.Fatalf("exit %d", code)
				}
			}

			spans, services, _ := c.received()
			var request, commit, eventql, queryRequest *tracepb.Span
			for i, s := range spans {
				if services[i] != "eventstore" {
					t.Errorf("span %s of service %q", s.Name, services[i])
				}
				switch s.Name {
				case "/api/v1/write-events":
					if hex.EncodeToString(s.TraceId) == traceID {
						request = s // the write of the caller's trace
					}
				case "eventstore.eventql":
					eventql = s
				case "/api/v1/run-eventql-query":
					queryRequest = s
				}
				for _, kv := range s.Attributes {
					text := kv.Value.String()
					if strings.Contains(text, "secret-subject") || strings.Contains(text, harness.Token) || strings.Contains(text, "FROM e IN") {
						t.Errorf("span %s has attribute %s = %s", s.Name, kv.Key, text)
					}
				}
			}
			for _, s := range spans { // the commit of the caller's write
				for _, l := range s.Links {
					if s.Name == "eventstore.commit" && request != nil && slices.Equal(l.SpanId, request.SpanId) {
						commit = s
					}
				}
			}
			if request == nil || commit == nil || eventql == nil || queryRequest == nil {
				names := make([]string, len(spans))
				for i, s := range spans {
					names[i] = s.Name
				}
				t.Fatalf("spans %v: want the write's and the query's requests, a commit and an EventQL evaluation", names)
			}
			if got := hex.EncodeToString(request.TraceId); got != traceID || hex.EncodeToString(request.ParentSpanId) != parentID {
				t.Errorf("the write's span is in trace %s below %x, not the caller's %s below %s", got, request.ParentSpanId, traceID, parentID)
			}
			if request.Kind != tracepb.Span_SPAN_KIND_SERVER || attr(request, "http.response.status_code").GetIntValue() != 200 {
				t.Errorf("the write's span: kind %v, status %v", request.Kind, attr(request, "http.response.status_code"))
			}
			if ids := attr(request, "eventstore.event.ids").GetArrayValue().GetValues(); len(ids) != 2 || ids[0].GetStringValue() != "0" || ids[1].GetStringValue() != "1" {
				t.Errorf("eventstore.event.ids %v, want [0 1]", ids)
			}
			linked := false
			for _, l := range commit.Links {
				linked = linked || slices.Equal(l.TraceId, request.TraceId) && slices.Equal(l.SpanId, request.SpanId)
			}
			if !linked || attr(commit, "eventstore.commit.events").GetIntValue() != 2 || len(commit.Events) != 1 || commit.Events[0].Name != "sync" {
				t.Errorf("commit span: links %v, events %v, span events %v; want a link to the write's span (in its trace), 2 events and a sync", commit.Links, attr(commit, "eventstore.commit.events"), commit.Events)
			}
			if !slices.Equal(eventql.TraceId, queryRequest.TraceId) || !slices.Equal(eventql.ParentSpanId, queryRequest.SpanId) || attr(eventql, "eventstore.eventql.rows").GetIntValue() != 2 {
				t.Errorf("EventQL span %x below %x with %v rows; the query's request span %x", eventql.TraceId, eventql.ParentSpanId, attr(eventql, "eventstore.eventql.rows"), queryRequest.SpanId)
			}
			for _, pair := range [][2]string{
				{"eventstore.validate", "/api/v1/write-events"},
				{"eventstore.backup", "/api/v1/backup"},
				{"eventstore.restore", "/api/v1/restore"},
				{"eventstore.verify", "/api/v1/verify-store"},
				{"eventstore.subscription.deliver", "/api/v1/consume-subscription"},
			} {
				if !hasChild(spans, pair[0], pair[1]) {
					t.Errorf("no %s span below a %s span", pair[0], pair[1])
				}
			}
		})
	}
}

// hasChild reports whether spans hold one named name whose parent is a
// span named parent.
func hasChild(spans []*tracepb.Span, name, parent string) bool {
	for _, p := range spans {
		for _, s := range spans {
			if p.Name == parent && s.Name == name && slices.Equal(s.TraceId, p.TraceId) && slices.Equal(s.ParentSpanId, p.SpanId) {
				return true
			}
		}
	}
	return false
}

// TestTracingOff: with --otel-enabled=false, or OTEL_SDK_DISABLED=true,
// a collector named by the variables receives nothing; and without the
// variables the service exports nowhere, not to the default endpoint of
// OTLP over HTTP either (when the test can listen on it).
func TestTracingOff(t *testing.T) {
	run := func(t *testing.T, extra ...string) {
		t.Helper()
		inst := harness.Start(t, bin, harness.Dev(extra...)...)
		if got := inst.Logs("eventstore is running")[0]["tracing"]; got != "off" {
			t.Errorf("the start log says tracing %v", got)
		}
		mustWrite(t, inst, candidates("/off", "io.example.x"))
		inst.Signal(syscall.SIGTERM)
		if code := inst.Wait(30 * time.Second); code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
	t.Run("flag", func(t *testing.T) {
		c := startCollector(t, "http/protobuf")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.endpoint)
		t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
		run(t, "--otel-enabled=false")
		if spans, _, exports := c.received(); exports != 0 {
			t.Errorf("--otel-enabled=false: %d exports, %d spans", exports, len(spans))
		}
	})
	t.Run("sdk-disabled", func(t *testing.T) {
		c := startCollector(t, "grpc")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
		t.Setenv("OTEL_SDK_DISABLED", "true")
		run(t)
		if spans, _, exports := c.received(); exports != 0 {
			t.Errorf("OTEL_SDK_DISABLED=true: %d exports, %d spans", exports, len(spans))
		}
	})
	t.Run("unset", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:4318")
		if err != nil {
			t.Skipf("the default OTLP port is taken, nothing to watch: %v", err)
		}
		accepted := make(chan struct{}, 1)
		go func() {
			if conn, err := ln.Accept(); err == nil {
				conn.Close()
				accepted <- struct{}{}
			}
		}()
		defer ln.Close()
		run(t)
		select {
		case <-accepted:
			t.Errorf("without OTEL_* variables the service connected to the default OTLP endpoint")
		default:
		}
	})
}

// TestTracingUnreachableCollector: with a collector that refuses every
// connection, every answer is the usual one, the spans that cannot be
// exported are counted in eventstore_otel_spans_dropped_total with one
// WARN line, and the shutdown ends within its time limit.
func TestTracingUnreachableCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
	inst := harness.Start(t, bin, harness.Dev("--shutdown-timeout=5s")...)
	for i := 0; i < 50; i++ {
		mustWrite(t, inst, candidates("/unreachable", "io.example.x"))
	}
	if got := len(stream(t, inst, "/api/v1/read-events", `{"subject":"/unreachable"}`)); got != 50 {
		t.Fatalf("read %d events, wrote 50", got)
	}
	inst.WaitForLog("trace spans dropped", 90*time.Second)
	if m := metrics(t, inst); m["eventstore_otel_spans_dropped_total"] < 1 {
		t.Errorf("eventstore_otel_spans_dropped_total %v after failed exports", m["eventstore_otel_spans_dropped_total"])
	}
	if n := len(inst.Logs("trace spans dropped")); n != 1 {
		t.Errorf("%d WARN lines of dropped spans within a minute, want 1", n)
	}
	stopped := time.Now()
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("the shutdown took %s with an unreachable collector", took)
	}
}
