package store

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Trace has the store record spans with t (docs/operations.md,
// "Tracing"): one per commit group, eventstore.commit, linked to the spans
// of its requests' callers, and one per batch validated against a schema,
// eventstore.validate. Without it the store records none and keeps no
// span context. Call it before Start.
func (s *Store) Trace(t trace.Tracer) { s.tracer = t }

// validate checks candidates against the schemas of their types, in an
// eventstore.validate span when tracing and a schema applies to one.
func (s *Store) validate(ctx context.Context, candidates []event.Candidate) error {
	if s.tracer == nil {
		return validateCandidates(candidates, s.schemas.get)
	}
	validated := 0
	for _, c := range candidates {
		if s.schemas.get(c.Type) != nil {
			validated++
		}
	}
	if validated == 0 {
		return nil
	}
	_, span := s.tracer.Start(ctx, "eventstore.validate", trace.WithAttributes(attribute.Int("eventstore.events", validated)))
	defer span.End()
	err := validateCandidates(candidates, s.schemas.get)
	if err != nil {
		span.SetStatus(codes.Error, "an event does not match the schema of its type") // never the event's data
	}
	return err
}

// commitSpan is the span of one attempt to commit a group, a no-op one
// without tracing.
type commitSpan struct{ span trace.Span }

// startCommit starts the span of a commit attempt.
func (s *Store) startCommit() commitSpan {
	if s.tracer == nil {
		return commitSpan{}
	}
	_, span := s.tracer.Start(context.Background(), "eventstore.commit", trace.WithSpanKind(trace.SpanKindInternal))
	return commitSpan{span}
}

// admitted links the span to the callers of the group's requests, and
// counts them and their events.
func (c commitSpan) admitted(group []*writeRequest) {
	if c.span == nil {
		return
	}
	events := 0
	for _, w := range group {
		events += len(w.Events)
		if w.caller.IsValid() {
			c.span.AddLink(trace.Link{SpanContext: w.caller})
		}
	}
	c.span.SetAttributes(attribute.Int("eventstore.commit.requests", len(group)), attribute.Int("eventstore.commit.events", events))
}

// synced records the backend's synced commit as an event with its duration.
func (c commitSpan) synced(took time.Duration) {
	if c.span != nil {
		c.span.AddEvent("sync", trace.WithAttributes(attribute.Float64("eventstore.sync.duration_seconds", took.Seconds())))
	}
}

// end ends the span, as failed with err unless nil.
func (c commitSpan) end(err error) {
	if c.span == nil {
		return
	}
	if err != nil {
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, "commit failed")
	}
	c.span.End()
}
