package eventapi

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
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
	candidates, preconditions, err := decodeWrite(sc, body, a.maxEventSize, a.condition)
	sc.Reset(nil)
	a.scanners.Put(sc)
	if err != nil {
		a.metrics.writeRequests.WithLabelValues(resultInvalid).Inc()
		httpkit.WriteError(w, err)
		return
	}
	records, err := a.store.Write(r.Context(), candidates, preconditions)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left before the write was queued: nothing was written
		}
		apiErr, result := storeError(err)
		a.metrics.writeRequests.WithLabelValues(result).Inc()
		httpkit.WriteError(w, apiErr)
		return
	}
	a.metrics.writeRequests.WithLabelValues(resultOK).Inc()
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
	it, err := a.store.Read(opts)
	if err != nil {
		a.log.Error("read failed", zap.Error(err))
		httpkit.WriteError(w, httpkit.Errorf(http.StatusInternalServerError, "internal error: storage read failed"))
		return
	}
	stream := httpkit.StartStream(w)
	sent, _ := a.streamEvents(r, stream, newPrefetcher(a.emitter), it, nil)
	a.metrics.eventsRead.WithLabelValues("read-events").Add(float64(sent))
}

// streamEvents writes an event line per record, formatted ahead by a
// prefetcher, until the iterator ends (ok), the client leaves, or the
// service stops (which gets the final error line); a read failure gets an
// error line too. onSent, unless nil, learns the id of every event sent.
func (a *API) streamEvents(r *http.Request, stream *httpkit.Stream, pf *prefetcher, it store.RecordIterator, onSent func(id uint64)) (sent int, ok bool) {
	p := pf.start(it)
	defer p.stop()
	for b := range p.batches() {
		err := b.lines(func(id uint64, line []byte) error {
			select {
			case <-r.Context().Done():
				return r.Context().Err()
			case <-a.stopping:
				stream.Error(httpkit.ErrShuttingDown.Message)
				return errStreamEnded
			default:
			}
			if err := stream.WriteLine(line); err != nil {
				return err
			}
			sent++
			if onSent != nil {
				onSent(id)
			}
			return nil
		})
		readErr := b.err
		p.recycle(b)
		if err != nil {
			return sent, false
		}
		if readErr != nil {
			a.log.Error("read failed", zap.Error(readErr))
			stream.Error("internal error: storage read failed")
			return sent, false
		}
	}
	return sent, true
}

// errStreamEnded stops a stream that has written its final line.
var errStreamEnded = errors.New("stream ended")

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
	it := a.store.Subjects(base)
	stream := httpkit.StartStream(w)
	var payload []byte
	for it.Next() {
		if r.Context().Err() != nil {
			break
		}
		payload = jsonscan.AppendString(append(payload[:0], `{"subject":`...), it.Value())
		if err := stream.Line("subject", append(payload, '}')); err != nil {
			break
		}
	}
	if err := it.Close(); err != nil {
		a.log.Error("read subjects failed", zap.Error(err))
		stream.Error("internal error: storage read failed")
	}
}
