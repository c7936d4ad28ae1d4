package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// Name is the instrumentation scope of the service's spans.
const Name = "github.com/eventstore-service/eventstore"

// traceparentHeader is the canonical key of the W3C trace context header.
const traceparentHeader = "Traceparent"

// defaultQueue is the batch processor's queue length unless
// OTEL_BSP_MAX_QUEUE_SIZE says otherwise.
const defaultQueue = 2048

// Tracing is the service's tracer provider: the SDK's, exporting over
// OTLP, when Settings enable it, else a no-op one.
type Tracing struct {
	settings Settings
	log      *zap.Logger
	sdk      *sdktrace.TracerProvider // nil when off
	provider trace.TracerProvider
	tracer   trace.Tracer
	props    propagation.TextMapPropagator
}

// New returns the tracing of s; version names the service's version in
// the resource. eventstore_otel_spans_dropped_total is registered either
// way. getenv reads the OTEL_* variables the exporter, the sampler and the
// resource take (it is os.Getenv but in tests).
func New(ctx context.Context, s Settings, version string, getenv func(string) string, log *zap.Logger, reg prometheus.Registerer) (*Tracing, error) {
	dropped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "eventstore_otel_spans_dropped_total",
		Help: "Trace spans dropped because the OpenTelemetry collector could not take them (a full export queue, a failed export, the end of a shutdown).",
	})
	if err := reg.Register(dropped); err != nil {
		return nil, fmt.Errorf("register tracing metrics: %w", err)
	}
	if !s.Enabled {
		provider := tracenoop.NewTracerProvider()
		return &Tracing{settings: s, provider: provider, tracer: provider.Tracer(Name)}, nil
	}
	exporter, err := newExporter(ctx, s.Protocol)
	if err != nil {
		return nil, err
	}
	// The service's name and version first: OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override them.
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "eventstore"), attribute.String("service.version", version)),
		resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	queue := defaultQueue
	if v, err := strconv.Atoi(getenv("OTEL_BSP_MAX_QUEUE_SIZE")); err == nil && v > 0 {
		queue = v
	}
	a := &accounting{limit: int64(queue), dropped: dropped, log: log, now: time.Now}
	a.next = sdktrace.NewBatchSpanProcessor(countingExporter{SpanExporter: exporter, a: a}, sdktrace.WithMaxQueueSize(queue))
	sdk := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(a))
	return &Tracing{settings: s, log: log, sdk: sdk, provider: sdk, tracer: sdk.Tracer(Name), props: propagation.TraceContext{}}, nil
}

// newExporter returns the OTLP exporter of protocol; it reads its
// endpoint, headers, timeout, compression and certificates from the
// OTEL_EXPORTER_OTLP_* variables itself, and connects lazily.
func newExporter(ctx context.Context, protocol string) (*otlptrace.Exporter, error) {
	var (
		exporter *otlptrace.Exporter
		err      error
	)
	if protocol == ProtocolGRPC {
		exporter, err = otlptracegrpc.New(ctx)
	} else {
		exporter, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s): %w", protocol, err)
	}
	return exporter, nil
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t.sdk != nil }

// Describe says where spans go, for the start log: "off" or "otlp
// <protocol>".
func (t *Tracing) Describe() string {
	if t.sdk == nil {
		return "off"
	}
	return "otlp " + t.settings.Protocol
}

// Tracer returns the service's tracer (a no-op one when off).
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// StartRequest starts the server span of request r to route in ctx (r's
// context or one derived from it): named by the route, continuing the
// caller's traceparent header, with the HTTP semantic-convention
// attributes of method, route and scheme (the required ones, and no more:
// each costs every request, and its export). It returns the context with
// the span; with tracing off (or t nil), ctx and nil.
func (t *Tracing) StartRequest(ctx context.Context, route string, r *http.Request) (context.Context, trace.Span) {
	if t == nil || t.sdk == nil {
		return ctx, nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if _, ok := r.Header[traceparentHeader]; ok { // most requests carry none: no header lookup then
		ctx = t.props.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	return t.tracer.Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(route), semconv.URLScheme(scheme)))
}

// EndRequest ends the span of a request with its response's status, an
// error from 500 on (a 4xx is the client's error, not the service's).
func EndRequest(span trace.Span, status int) {
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// Shutdown exports the spans that wait within ctx and stops the exporter.
// A collector too slow for ctx never fails the service's stop: the spans
// not exported are counted as dropped, and a WARN line says so.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		t.log.Warn("trace spans not flushed", zap.Error(err))
	}
	return nil
}
