package eventapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/storedb"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// RunEventQLQueryPath is the path of the EventQL endpoint.
const RunEventQLQueryPath = "/api/v1/run-eventql-query"

// Outcomes of queries, the result label of eventstore_eventql_queries_total.
const (
	queryOK      = "ok"      // ended without an error line
	queryInvalid = "invalid" // answered 400
	queryError   = "error"   // ended with an error line
)

// DecodeQuery reads a run-eventql-query body and compiles its query; a
// missing query is the empty query.
func DecodeQuery(body []byte) (*eventql.Program, error) {
	var req struct {
		Query *string `json:"query"`
	}
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return nil, err
	}
	program, err := eventql.Compile(deref(req.Query))
	if err != nil {
		return nil, badRequest("invalid query: %s", err)
	}
	return program, nil
}

// condition returns the store condition of an isEventQlQueryTrue query,
// with the precondition limits.
func (a *API) condition(program *eventql.Program) store.Condition {
	return storedb.NewCondition(program, a.emitter, eventql.Options{MemoryLimit: a.eventql.MemoryLimit, TimeLimit: a.eventql.PreconditionTimeout})
}

// errShutdown is the cause of a query's end when the service stops.
var errShutdown = errors.New("shutting down")

// runEventQLQuery is POST /api/v1/run-eventql-query: the rows of the query
// as an NDJSON stream of row lines, on the state durable when it started,
// with a heartbeat after each idle second while it runs.
func (a *API) runEventQLQuery(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err == nil {
		var program *eventql.Program
		if program, err = DecodeQuery(body); err == nil {
			a.metrics.queries.WithLabelValues(a.streamQuery(w, r, program)).Inc()
			return
		}
	}
	a.metrics.queries.WithLabelValues(queryInvalid).Inc()
	httpkit.WriteError(w, err)
}

// streamQuery runs program in a goroutine of its own and writes its rows
// as they come, so that evaluation and the network work in parallel; it
// returns the outcome.
func (a *API) streamQuery(w http.ResponseWriter, r *http.Request, program *eventql.Program) string {
	view := a.store.View()
	stream := httpkit.StartStream(w)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	pipe := newRowPipe()
	var (
		stats  eventql.Stats
		runErr error
	)
	go func() {
		defer close(pipe.done)
		var line []byte
		stats, runErr = program.Run(ctx, storedb.New(view, a.emitter), eventql.Options{MemoryLimit: a.eventql.MemoryLimit}, func(v eventql.Value) error {
			line = append(line[:0], `{"type":"row","payload":`...)
			line = append(v.AppendJSON(line), '}', '\n')
			return pipe.put(ctx, line)
		})
	}()
	finish := func() {
		<-pipe.done
		a.metrics.eventsRead.WithLabelValues("run-eventql-query").Add(float64(stats.EventsLoaded))
	}

	heartbeat := time.NewTimer(HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		select {
		case <-pipe.ready:
			if !pipe.write(stream) {
				cancel(nil) // the client is gone or too slow
				finish()
				return queryOK
			}
			heartbeat.Reset(HeartbeatInterval)
		case <-heartbeat.C:
			if stream.Line("heartbeat", []byte("{}")) != nil {
				cancel(nil)
				finish()
				return queryOK
			}
			heartbeat.Reset(HeartbeatInterval)
		case <-a.stopping:
			cancel(errShutdown)
			finish()
			stream.Error(httpkit.ErrShuttingDown.Message)
			return queryError
		case <-pipe.done:
			finish()
			if !pipe.write(stream) {
				return queryOK
			}
			var qe *eventql.Error
			switch {
			case runErr == nil:
				return queryOK
			case errors.As(runErr, &qe):
				stream.Error("query failed: " + qe.Error())
			case r.Context().Err() != nil:
				return queryOK // the client left; nothing more can be said to it
			default:
				a.log.Error("query failed", zap.Error(runErr))
				stream.Error("query failed: internal error: " + runErr.Error())
			}
			return queryError
		}
	}
}

// rowPipeBytes bounds the lines a query may have ready while the client
// reads slowly; the query waits beyond it.
const rowPipeBytes = 256 << 10

// rowPipe hands a query's lines from the goroutine that evaluates it to the
// one that writes them. Lines gather in a pending buffer that the writer
// takes whole whenever it is free: a row goes out as soon as the writer
// can take it, and the query runs on while the writer waits for the
// network.
type rowPipe struct {
	mu      sync.Mutex
	pending []byte        // complete lines
	spare   []byte        // the buffer the writer gave back
	ready   chan struct{} // signalled when pending has lines
	room    chan struct{} // signalled when pending was taken
	done    chan struct{} // closed when the query ended
}

func newRowPipe() *rowPipe {
	return &rowPipe{ready: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
}

// put adds a line, waiting while the pending lines are over the bound.
func (p *rowPipe) put(ctx context.Context, line []byte) error {
	p.mu.Lock()
	for len(p.pending) >= rowPipeBytes {
		p.mu.Unlock()
		select {
		case <-p.room:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		p.mu.Lock()
	}
	p.pending = append(p.pending, line...)
	p.mu.Unlock()
	select {
	case p.ready <- struct{}{}:
	default:
	}
	return nil
}

// write takes the pending lines and writes them one by one, each with a
// write and a flush of its own; it reports whether all were written.
func (p *rowPipe) write(stream *httpkit.Stream) bool {
	p.mu.Lock()
	lines := p.pending
	p.pending = p.spare[:0]
	p.mu.Unlock()
	select {
	case p.room <- struct{}{}:
	default:
	}
	for rest := lines; len(rest) > 0; {
		end := bytes.IndexByte(rest, '\n') + 1
		if stream.WriteLine(rest[:end]) != nil {
			return false
		}
		rest = rest[end:]
	}
	p.mu.Lock()
	p.spare = lines
	p.mu.Unlock()
	return true
}
