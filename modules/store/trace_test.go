package store_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestTraceSpans: with a tracer, a commit group has its eventstore.commit
// span, linked to the span of each writer's context, with the requests,
// the events and the sync; a write validated against a schema has an
// eventstore.validate span below its caller's. Without one, no span.
func TestTraceSpans(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	s := store.New(storetest.Pebble.New(t), zap.NewNop(), nil, store.Memory{})
	s.Trace(tp.Tracer("test"))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })

	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	if _, err := s.Write(ctx, []event.Candidate{candidate("/a", lib+"x", `{}`), candidate("/a", lib+"x", `{}`)}, nil); err != nil {
		t.Fatal(err)
	}
	caller.End()
	var commit sdktrace.ReadOnlySpan
	for _, sp := range spans.Ended() {
		if sp.Name() == "eventstore.commit" {
			commit = sp
		}
	}
	if commit == nil {
		t.Fatalf("no eventstore.commit span among %d", len(spans.Ended()))
	}
	attrs := map[string]int64{}
	for _, kv := range commit.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInt64()
	}
	if len(commit.Links()) != 1 || commit.Links()[0].SpanContext.SpanID() != caller.SpanContext().SpanID() ||
		attrs["eventstore.commit.requests"] != 1 || attrs["eventstore.commit.events"] != 2 ||
		len(commit.Events()) != 1 || commit.Events()[0].Name != "sync" {
		t.Errorf("commit span: links %v, attributes %v, events %v", commit.Links(), attrs, commit.Events())
	}
	for _, sp := range spans.Ended() {
		if sp.Name() == "eventstore.validate" {
			t.Errorf("a validate span without a schema")
		}
	}

	if err := s.RegisterSchema(context.Background(), lib+"y", mustCompile(t, `{"type":"object","properties":{},"additionalProperties":true}`)); err != nil {
		t.Fatal(err)
	}
	ctx, caller = tp.Tracer("test").Start(context.Background(), "caller")
	if _, err := s.Write(ctx, []event.Candidate{candidate("/b", lib+"y", `{}`)}, nil); err != nil {
		t.Fatal(err)
	}
	caller.End()
	validated := false
	for _, sp := range spans.Ended() {
		validated = validated || sp.Name() == "eventstore.validate" && sp.Parent().SpanID() == caller.SpanContext().SpanID()
	}
	if !validated {
		t.Errorf("no eventstore.validate span below the caller's")
	}
}
