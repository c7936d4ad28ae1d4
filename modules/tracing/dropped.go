package tracing

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
)

// warnEvery is the least time between two WARN lines of dropped spans.
const warnEvery = time.Minute

// accounting sits in front of the batch span processor and counts every
// span that does not reach the collector: past limit spans ended and not
// yet exported (queued or in an export) a span is dropped at once, so that
// the batch processor's queue, as long, never overflows unnoticed; a
// failed export drops its spans; and spans not exported by the end of a
// shutdown are dropped. Requests never wait for any of it.
type accounting struct {
	next    sdktrace.SpanProcessor
	limit   int64
	pending atomic.Int64
	dropped prometheus.Counter
	log     *zap.Logger
	now     func() time.Time

	unwarned atomic.Int64 // dropped since the last WARN line
	warned   atomic.Int64 // when it was written, in Unix nanoseconds
}

var _ sdktrace.SpanProcessor = (*accounting)(nil)

// OnStart passes the span on.
func (a *accounting) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { a.next.OnStart(ctx, s) }

// OnEnd queues a sampled span for export, or drops it when limit spans
// wait already.
func (a *accounting) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return // the batch processor exports sampled spans only
	}
	if a.pending.Add(1) > a.limit {
		a.pending.Add(-1)
		a.drop(1, "the export queue is full")
		return
	}
	a.next.OnEnd(s)
}

// ForceFlush exports what waits.
func (a *accounting) ForceFlush(ctx context.Context) error { return a.next.ForceFlush(ctx) }

// Shutdown exports what waits within ctx and drops the rest.
func (a *accounting) Shutdown(ctx context.Context) error {
	err := a.next.Shutdown(ctx)
	if n := a.pending.Load(); n > 0 {
		a.drop(n, "not exported before the shutdown timeout")
	}
	return err
}

// drop counts n dropped spans and writes a WARN line, at most one per
// warnEvery, with the spans dropped since the last one.
func (a *accounting) drop(n int64, reason string) {
	a.dropped.Add(float64(n))
	total := a.unwarned.Add(n)
	now := a.now().UnixNano()
	last := a.warned.Load()
	if last != 0 && now-last < int64(warnEvery) {
		return
	}
	if !a.warned.CompareAndSwap(last, now) {
		return
	}
	a.unwarned.Add(-total)
	a.log.Warn("trace spans dropped", zap.Int64("spans", total), zap.String("reason", reason))
}

// countingExporter counts the spans of each export as no longer pending,
// and those of a failed one as dropped: the error goes no further (the
// SDK would print it to stderr), requests never see it.
type countingExporter struct {
	sdktrace.SpanExporter
	a *accounting
}

// ExportSpans exports spans and accounts for them.
func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	e.a.pending.Add(-int64(len(spans)))
	if err != nil {
		e.a.drop(int64(len(spans)), "the collector did not take them: "+err.Error())
	}
	return nil
}
