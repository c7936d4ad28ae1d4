package eventapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

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
		Query string `json:"query"` // null as absent
	}
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return nil, err
	}
	program, err := eventql.Compile(req.Query)
	if err != nil {
		return nil, badRequest("invalid query: %s", err)
	}
	return program, nil
}

// condition returns the store condition of an isEventQlQueryTrue query,
// with the precondition limits.
func (a *API) condition(program *eventql.Program) store.Condition {
	return storedb.NewCondition(program, a.emitter, eventql.Options{MemoryLimit: a.eventql.MemoryLimit, TimeLimit: a.eventql.PreconditionTimeout, Pool: a.eventql.Pool, Pace: startPacing,
		Ran: func(stats eventql.Stats) { a.readMany.ran(program, stats) }})
}

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
	if a.refuseUnreachable(w) {
		return queryError
	}
	view, err := a.store.Current()
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return queryError
	}
	stream := a.startStream(w, r)
	defer stream.end()
	var stats eventql.Stats
	runErr, ended := stream.pump(newLinePipe(), func(ctx context.Context, put putFunc) error {
		var (
			line []byte
			err  error
		)
		opts := eventql.Options{MemoryLimit: a.eventql.MemoryLimit, TimeLimit: a.eventql.QueryTimeout, Pool: a.eventql.Pool}
		ctx, span := a.tracer.Start(ctx, "eventstore.eventql") // never the query's text
		defer span.End()
		rows := 0
		stats, err = program.Run(ctx, storedb.New(view, a.emitter), opts, func(v eventql.Value) error {
			rows++
			line = append(line[:0], `{"type":"row","payload":`...)
			line = append(v.AppendJSON(line), '}', '\n')
			return put(0, line)
		})
		span.SetAttributes(attribute.Int("eventstore.eventql.rows", rows), attribute.Int64("eventstore.eventql.events_loaded", int64(stats.EventsLoaded)))
		if err != nil {
			span.SetStatus(codes.Error, "the query failed")
		}
		return err
	}, true, nil)
	a.metrics.eventsRead.WithLabelValues("run-eventql-query").Add(float64(stats.EventsLoaded))

	var qe *eventql.Error
	switch {
	case errors.Is(ended, errStopped):
		return queryError
	case ended != nil, runErr == nil:
		return queryOK // ended != nil: the client is gone or too slow
	case errors.As(runErr, &qe) && qe.Err == nil: // the query's own runtime error
		stream.Error("query failed: " + qe.Error())
	case r.Context().Err() != nil:
		return queryOK // the client left; nothing more can be said to it
	case errors.Is(runErr, store.ErrUnavailable):
		stream.Error(errUnreachable.Message)
	default: // reading the store failed: the detail goes to the log only
		stream.Error("query failed: " + a.ReadError(runErr).Message)
	}
	return queryError
}

// pacer keeps a query precondition to two thirds of a processor: after
// each stretch of work it waits half as long as it worked, so that a heavy
// precondition slows its own write rather than the writes beside it (on a
// two-core machine a precondition at full speed takes a core from them).
type pacer struct{ since time.Time }

func newPacer() *pacer { return &pacer{since: time.Now()} }

// startPacing paces a run of a precondition from its start (and again
// after a heavy run's wait for its turn, eventql.Options.Turn): a wait is
// no work to leave room for.
func startPacing() func() { return newPacer().pace }

func (p *pacer) pace() {
	if worked := time.Since(p.since); worked >= 2*time.Millisecond {
		time.Sleep(worked / 2)
		p.since = time.Now()
	}
}
