package eventapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// writeEvents is POST /api/v1/write-events: 200 with the written events as
// a JSON array in request order, once they are durable.
func (a *API) writeEvents(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		a.metrics.writeRequests.WithLabelValues(resultInvalid).Inc()
		httpkit.WriteError(w, err)
		return
	}
	sc := a.scanners.Get().(*jsonscan.Scanner)
	candidates, preconditions, rawAcknowledge, err := decodeWrite(sc, body, a.maxEventSize, a.condition)
	sc.Reset(nil)
	a.scanners.Put(sc)
	var acknowledge *subscriptions.Settle
	if err == nil && rawAcknowledge != nil {
		acknowledge, err = a.decodeAcknowledge(rawAcknowledge)
	}
	if err != nil {
		a.metrics.writeRequests.WithLabelValues(resultInvalid).Inc()
		httpkit.WriteError(w, err)
		return
	}
	if !auth.Allowed(r.Context(), writeNeed(candidates, preconditions)) || acknowledge != nil && !auth.Allowed(r.Context(), consumeNeed(acknowledge.Subscription)) {
		auth.Refuse(w, r)
		return
	}
	var records []event.Record
	if acknowledge == nil {
		records, err = a.store.Write(r.Context(), candidates, preconditions)
	} else {
		acknowledge.Write = store.Request{Events: candidates, Preconditions: preconditions}
		var settled subscriptions.Settled
		settled, err = a.subs.Settle(r.Context(), *acknowledge)
		records = settled.Records
		if errors.Is(err, subscriptions.ErrNotHeld) || errors.Is(err, subscriptions.ErrNotFound) {
			a.metrics.writeRequests.WithLabelValues(resultPreconditionFailed).Inc()
			httpkit.WriteError(w, a.subscriptionError(acknowledge.Subscription, err))
			return
		}
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left before the write was queued: nothing was written
		}
		apiErr, result := a.storeError(err)
		a.metrics.writeRequests.WithLabelValues(result).Inc()
		httpkit.WriteError(w, apiErr)
		return
	}
	a.metrics.writeRequests.WithLabelValues(resultOK).Inc()
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() && len(records) > 0 {
		// The trace leads to the events it wrote: the first and the last id.
		first, last := strconv.FormatUint(records[0].ID, 10), strconv.FormatUint(records[len(records)-1].ID, 10)
		span.SetAttributes(attribute.StringSlice("eventstore.event.ids", []string{first, last}))
	}
	size := 2
	for _, rec := range records {
		size += len(rec.JSON) + 160
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, rec := range records {
		if i > 0 {
			out = append(out, ',')
		}
		out = a.emitter.Append(out, rec)
	}
	out = append(out, ']', '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// readEvents is POST /api/v1/read-events: an NDJSON stream of event lines.
func (a *API) readEvents(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	opts, err := DecodeRead(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if !auth.Allowed(r.Context(), readNeed(opts.Subject, opts.FromLatest)) {
		auth.Refuse(w, r)
		return
	}
	if a.refuseUnreachable(w) {
		return
	}
	it, err := a.store.Read(opts)
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	sent, _ := a.streamEvents(stream, newLinePipe(), it, nil)
	a.metrics.eventsRead.WithLabelValues("read-events").Add(float64(sent))
}

// streamEvents writes an event line per record of it, formatted ahead in a
// goroutine of its own, until the iterator ends (ok), the client leaves or
// the service stops; a read failure ends the stream with an error line.
// sent, unless nil, learns the id of every event written.
func (a *API) streamEvents(s *lineStream, p *linePipe, it store.RecordIterator, sent func(id uint64)) (n int, ok bool) {
	readErr, ended := s.pump(p, func(ctx context.Context, put putFunc) error {
		var line []byte
		for it.Next() {
			line = a.appendEventLine(line[:0], it.Record())
			if err := put(it.Record().ID, line); err != nil {
				it.Close()
				return err
			}
		}
		return it.Close() // once: a second Close may close an iterator Pebble has handed out again
	}, false, func(id uint64) {
		n++
		if sent != nil {
			sent(id)
		}
	})
	if ended != nil {
		return n, false
	}
	if readErr != nil {
		s.Error(a.ReadError(readErr).Message)
		return n, false
	}
	return n, true
}

// appendEventLine appends the event line of r: the event is formatted in
// place, without a copy through a payload buffer.
func (a *API) appendEventLine(dst []byte, r event.Record) []byte {
	dst = append(dst, `{"type":"event","payload":`...)
	dst = a.emitter.Append(dst, r)
	return append(dst, '}', '\n')
}

// readSubjects is POST /api/v1/read-subjects: an NDJSON stream of subject lines.
func (a *API) readSubjects(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	base, err := DecodeSubjects(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if a.refuseUnreachable(w) {
		return
	}
	it := a.store.Subjects(base)
	stream := a.startStream(w, r)
	defer stream.end()
	g := auth.GrantsOf(r.Context())
	var payload []byte
	for it.Next() {
		if !g.CanRead(it.Value()) {
			continue // only the subjects under the token's read prefixes
		}
		payload = jsonscan.AppendString(append(payload[:0], `{"subject":`...), it.Value())
		if err := stream.line("subject", append(payload, '}')); err != nil {
			break
		}
	}
	if err := it.Close(); err != nil {
		stream.Error(a.ReadError(err).Message)
	}
}
