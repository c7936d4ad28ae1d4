package tracing

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestReadSettings(t *testing.T) {
	cases := []struct {
		name    string
		flag    bool
		env     map[string]string
		want    Settings
		wantErr bool
	}{
		{"unset", true, nil, Settings{Protocol: ProtocolHTTP}, false},
		{"endpoint", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, Settings{Enabled: true, Protocol: ProtocolHTTP}, false},
		{"traces endpoint, grpc", true, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, Settings{Enabled: true, Protocol: ProtocolGRPC}, false},
		{"traces protocol wins", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, Settings{Enabled: true, Protocol: ProtocolHTTP}, false},
		{"flag off", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x"}, Settings{Protocol: ProtocolHTTP}, false},
		{"sdk disabled", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "TRUE"}, Settings{Protocol: ProtocolHTTP}, false},
		{"exporter none", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none"}, Settings{Protocol: ProtocolHTTP}, false},
		{"http/json", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, Settings{}, true},
		{"zipkin", true, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "zipkin"}, Settings{}, true},
		{"bad protocol while off", false, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, Settings{Protocol: "http/json"}, false},
	}
	for _, c := range cases {
		got, err := ReadSettings(c.flag, func(k string) string { return c.env[k] })
		if (err != nil) != c.wantErr || err == nil && got != c.want {
			t.Errorf("%s: %+v, %v; want %+v, error %v", c.name, got, err, c.want, c.wantErr)
		}
	}
}

func TestOffWrapsNothing(t *testing.T) {
	tr, err := New(context.Background(), Settings{}, "dev", func(string) string { return "" }, zap.NewNop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() || tr.Tracer() == nil {
		t.Fatalf("enabled %v", tr.Enabled())
	}
	r := httptest.NewRequest("GET", "/x", nil)
	if got, span := tr.StartRequest(r.Context(), "/x", r); got != r.Context() || span != nil {
		t.Errorf("a request span with tracing off")
	}
	if got, span := (*Tracing)(nil).StartRequest(r.Context(), "/x", r); got != r.Context() || span != nil {
		t.Errorf("a request span without tracing")
	}
	if _, span := tr.Tracer().Start(context.Background(), "x"); span.IsRecording() {
		t.Error("a span records with tracing off")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// failing is an exporter that fails every export.
type failing struct{ sdktrace.SpanExporter }

func (failing) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	return errors.New("connection refused")
}

// TestAccounting: spans past the limit, spans of failed exports and spans
// left at shutdown are counted as dropped, with one WARN a minute.
func TestAccounting(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	now := time.Unix(1000, 0)
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})
	a := &accounting{limit: 3, dropped: dropped, log: zap.New(core), now: func() time.Time { return now }}
	mem := tracetest.NewInMemoryExporter()
	exporter := countingExporter{SpanExporter: mem, a: a}
	a.next = sdktrace.NewSimpleSpanProcessor(exporter) // exports at each end, so nothing stays pending
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(a))
	for range 5 {
		_, span := tp.Tracer("t").Start(context.Background(), "s")
		span.End()
	}
	if got := len(mem.GetSpans()); got != 5 || testutil.ToFloat64(dropped) != 0 || a.pending.Load() != 0 {
		t.Fatalf("exported %d, dropped %v, pending %d; want 5, 0, 0", got, testutil.ToFloat64(dropped), a.pending.Load())
	}

	// A queue that does not drain: the fourth span on is dropped.
	a.next = blocked{}
	for range 5 {
		_, span := tp.Tracer("t").Start(context.Background(), "s")
		span.End()
	}
	if got := testutil.ToFloat64(dropped); got != 2 || a.pending.Load() != 3 {
		t.Fatalf("dropped %v, pending %d; want 2 and 3", got, a.pending.Load())
	}
	if logs.Len() != 1 {
		t.Fatalf("%d WARN lines, want 1", logs.Len())
	}

	// A failed export counts its spans, without a second WARN within the
	// minute; the next minute's line tells them all.
	a.pending.Store(2)
	_ = countingExporter{SpanExporter: failing{mem}, a: a}.ExportSpans(context.Background(), make([]sdktrace.ReadOnlySpan, 2))
	if got := testutil.ToFloat64(dropped); got != 4 || logs.Len() != 1 || a.pending.Load() != 0 {
		t.Fatalf("dropped %v, %d WARN lines, pending %d", got, logs.Len(), a.pending.Load())
	}
	now = now.Add(time.Minute)
	a.pending.Store(1)
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(dropped); got != 5 || logs.Len() != 2 {
		t.Fatalf("after the shutdown: dropped %v, %d WARN lines", got, logs.Len())
	}
	if spans := logs.All()[1].ContextMap()["spans"]; spans != int64(4) { // the second of the queue, the export's 2, the shutdown's
		t.Errorf("the second WARN line tells %v spans, want the 4 since the first", spans)
	}
}

// blocked is a span processor that keeps every span (a queue that does
// not drain).
type blocked struct{}

func (blocked) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (blocked) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (blocked) Shutdown(context.Context) error                  { return nil }
func (blocked) ForceFlush(context.Context) error                { return nil }
