package eventapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/backup"
	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// Paths of the event endpoints.
const (
	WriteEventsPath  = "/api/v1/write-events"
	ReadEventsPath   = "/api/v1/read-events"
	ReadSubjectsPath = "/api/v1/read-subjects"
)

// API serves the event endpoints over a store.
type API struct {
	store        *store.Store
	emitter      *event.Emitter
	events       *envelope.Builder
	maxEventSize int64
	backup       backup.Limits // of the lines of a restore
	stopping     context.Context
	metrics      *Metrics
	log          *zap.Logger
	eventql      QueryLimits
	restores     Restores
	streams      *admission // read, observe, subject, event-type and backup streams, and those admitted by AdmitStream
	queries      *admission // run-eventql-query
	scanners     sync.Pool  // of *jsonscan.Scanner, whose scratch buffers outlive a request
	subs         *subscriptions.Manager
	tracer       trace.Tracer
	readMany     *readMany // warns about precondition queries that read many events
}

// Options configure the API.
type Options struct {
	// MaxEventSize limits the canonical data of one event.
	MaxEventSize int64
	// MaxRequestSize limits request bodies, and so the schemas a restore
	// may hold.
	MaxRequestSize int64
	// Stopping is done when the service's stop phase begins; open streams
	// end with a final error line then. Nil never stops.
	Stopping context.Context
	// EventQL limits queries and query preconditions.
	EventQL QueryLimits
	// MaxStreams bounds the open read, observe, subject, event-type and
	// backup streams and those of other packages' routes (AdmitStream);
	// MaxQueries the queries running at once. Zero is no bound.
	MaxStreams, MaxQueries int
	// Restores tells the service that a restore runs; nil: restores run
	// without telling anyone.
	Restores Restores
	// Subscriptions serves the subscription routes and write-events with
	// acknowledge; nil leaves them out (an API for the other routes only,
	// as tests build it): the routes are unknown, and acknowledge fails as
	// an unknown subscription.
	Subscriptions *subscriptions.Manager
	// Tracer records the spans of queries, backups, restores and
	// subscription deliveries; nil records none.
	Tracer trace.Tracer
}

// Restores marks a restore as running, so that the service answers 503 to
// everything else meanwhile; BeginRestore is false when one already runs.
type Restores interface {
	BeginRestore() bool
	EndRestore()
	Restoring() bool
}

// noRestores lets one restore run at a time and tells no one.
type noRestores struct{ running atomic.Bool }

func (n *noRestores) BeginRestore() bool { return n.running.CompareAndSwap(false, true) }
func (n *noRestores) EndRestore()        { n.running.Store(false) }
func (n *noRestores) Restoring() bool    { return n.running.Load() }

// QueryLimits bound EventQL executions.
type QueryLimits struct {
	// MemoryLimit is the budget of one execution's blocking steps in bytes.
	MemoryLimit int64
	// PreconditionTimeout bounds one isEventQlQueryTrue evaluation.
	PreconditionTimeout time.Duration
	// QueryTimeout bounds one run-eventql-query; zero is no bound.
	QueryTimeout time.Duration
	// Pool, unless nil, is the memory all running queries and query
	// preconditions share.
	Pool *eventql.MemoryPool
}

// New returns the API over s, emitting events with emitter and management
// events with events.
func New(s *store.Store, emitter *event.Emitter, events *envelope.Builder, metrics *Metrics, log *zap.Logger, opts Options) *API {
	if opts.Stopping == nil {
		opts.Stopping = context.Background() // never stops
	}
	if opts.Restores == nil {
		opts.Restores = &noRestores{}
	}
	if opts.Tracer == nil {
		opts.Tracer = tracenoop.NewTracerProvider().Tracer("")
	}
	a := &API{store: s, emitter: emitter, events: events, maxEventSize: opts.MaxEventSize, stopping: opts.Stopping, restores: opts.Restores,
		backup:  backup.Limits{MaxEventSize: opts.MaxEventSize, MaxSchemaSize: opts.MaxRequestSize},
		metrics: metrics, log: log, eventql: opts.EventQL, subs: opts.Subscriptions, tracer: opts.Tracer, readMany: newReadMany(log)}
	if a.subs != nil {
		a.backup.MaxSubscriptions = a.subs.Limit()
	}
	a.scanners.New = func() any { return jsonscan.New(nil) }
	unbounded := func(n int) int {
		if n <= 0 {
			return math.MaxInt
		}
		return n
	}
	a.streams = newAdmission(unbounded(opts.MaxStreams), "streams", metrics.streams)
	a.queries = newAdmission(unbounded(opts.MaxQueries), "queries", metrics.runningQueries)
	return a
}

// Tracer returns the tracer of the API's spans (a no-op one without
// tracing), for the routes of other packages.
func (a *API) Tracer() trace.Tracer { return a.tracer }

// Routes returns the routes of the event endpoints.
func (a *API) Routes() []httpkit.Route {
	return append([]httpkit.Route{
		{Method: http.MethodPost, Path: WriteEventsPath, Permission: httpkit.PermitWrite, Handler: http.HandlerFunc(a.writeEvents)},
		{Method: http.MethodPost, Path: ReadEventsPath, Permission: httpkit.PermitRead, Handler: a.streams.admit(a.readEvents)},
		{Method: http.MethodPost, Path: ObserveEventsPath, Permission: httpkit.PermitRead, Handler: a.streams.admit(a.observeEvents)},
		{Method: http.MethodPost, Path: ReadSubjectsPath, Permission: httpkit.PermitRead, Handler: a.streams.admit(a.readSubjects)},
		{Method: http.MethodPost, Path: ReadSubjectChildrenPath, Permission: httpkit.PermitRead, Handler: http.HandlerFunc(a.readSubjectChildren)},
		{Method: http.MethodPost, Path: SearchSubjectsPath, Permission: httpkit.PermitRead, Handler: http.HandlerFunc(a.searchSubjects)},
		{Method: http.MethodPost, Path: RegisterEventSchemaPath, Permission: httpkit.PermitSchemas, Handler: http.HandlerFunc(a.registerEventSchema)},
		{Method: http.MethodPost, Path: ReadEventTypesPath, Permission: httpkit.PermitRead, Handler: a.streams.admit(a.readEventTypes)},
		{Method: http.MethodPost, Path: ReadEventTypePath, Permission: httpkit.PermitRead, Handler: http.HandlerFunc(a.readEventType)},
		{Method: http.MethodPost, Path: RunEventQLQueryPath, Permission: httpkit.PermitQuery, Handler: a.queries.admit(a.runEventQLQuery), Download: "query.ndjson"},
		{Method: http.MethodPost, Path: BackupPath, Permission: httpkit.PermitOperate, Handler: a.streams.admit(a.backupEvents), Download: "eventstore-backup.ndjson"},
		{Method: http.MethodPost, Path: RestorePath, Permission: httpkit.PermitOperate, Handler: http.HandlerFunc(a.restoreBackup), UnlimitedBody: true, DuringRestore: true},
	}, append(append(a.dataIndexRoutes(), a.subscriptionRoutes()...), a.eraseRoute())...)
}

// AdmitStream serves h for the requests that --max-streams admits among
// the open streams, refusing the others (the streams of other packages'
// routes count with the event streams), and answers 503 instead while the
// shared storage backend is unreachable, as the event streams do.
func (a *API) AdmitStream(h http.HandlerFunc) http.Handler {
	return a.streams.admit(func(w http.ResponseWriter, r *http.Request) {
		if !a.refuseUnreachable(w) {
			h(w, r)
		}
	})
}

// Metrics count the API's requests and events.
type Metrics struct {
	writeRequests  *prometheus.CounterVec
	eventsRead     *prometheus.CounterVec
	observers      prometheus.Gauge
	observeSent    prometheus.Counter
	queries        *prometheus.CounterVec
	streams        prometheus.Gauge
	runningQueries prometheus.Gauge
	erased         prometheus.Counter
}

// NewMetrics registers the API metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		writeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventstore_write_requests_total", Help: "write-events requests by outcome."}, []string{"result"}),
		eventsRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventstore_events_read_total", Help: "Events emitted (read, observe) or scanned (query)."}, []string{"operation"}),
		observers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_observers", Help: "Open observe-events streams."}),
		observeSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventstore_observe_events_sent_total", Help: "Live events delivered to observers (written after the observer started)."}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventstore_eventql_queries_total", Help: "run-eventql-query requests by outcome."}, []string{"result"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_streams", Help: "Open read-events, observe-events, read-subjects, read-event-types and verify-store streams (bounded by --max-streams)."}),
		runningQueries: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventstore_eventql_queries_running", Help: "run-eventql-query requests running (bounded by --max-queries)."}),
		erased: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventstore_events_erased_total", Help: "Events whose data erase-events erased."}),
	}
	if err := metrics.Register(reg, m.writeRequests, m.eventsRead, m.observers, m.observeSent, m.queries, m.streams, m.runningQueries, m.erased); err != nil {
		return nil, err
	}
	return m, nil
}

// Outcomes of write requests, the result label of eventstore_write_requests_total.
const (
	resultOK                 = "ok"
	resultInvalid            = "invalid"
	resultPreconditionFailed = "precondition_failed"
	resultSchemaConflict     = "schema_conflict"
	resultUnavailable        = "unavailable"
	resultStorageError       = "storage_error"
)

// errUnreachable answers while a shared storage backend cannot be reached.
var errUnreachable = &httpkit.Error{Status: http.StatusServiceUnavailable, Message: "service unavailable: storage unreachable", RetryAfter: 1}

// refuseUnreachable answers 503 before a stream starts while the shared
// storage backend cannot be reached (the node's last commit or poll of it
// failed), and reports whether it did. A stream that started before the
// node noticed ends with the same message as its error line.
func (a *API) refuseUnreachable(w http.ResponseWriter) bool {
	if !a.store.Unreachable() {
		return false
	}
	httpkit.WriteError(w, errUnreachable)
	return true
}

// ReadError translates a failed read into its answer (also the message of
// a stream's error line) and logs what is not the backend being unreachable.
func (a *API) ReadError(err error) *httpkit.Error {
	if errors.Is(err, store.ErrUnavailable) {
		return errUnreachable
	}
	a.log.Error("read failed", zap.Error(err))
	return httpkit.Errorf(http.StatusInternalServerError, "internal error: storage read failed")
}

// StoreError translates an error of the store into the response the API
// gives for it, as every handler of a store operation does: the detail of
// a failure the client cannot act on goes to the log, never into the
// response (logStoreError).
func (a *API) StoreError(err error) *httpkit.Error {
	apiErr, _ := a.storeError(err)
	return apiErr
}

// storeError is StoreError with the outcome label of write metrics.
func (a *API) storeError(err error) (*httpkit.Error, string) {
	apiErr, result := translateStoreError(err)
	a.logStoreError(err, apiErr)
	return apiErr, result
}

// logStoreError logs err when its answer apiErr leaves out what went wrong
// and nothing else logs it: an unexpected failure (500 without detail) and
// a precondition whose query failed to read the store. A storage failure
// (500 "internal error: storage failure") the store logs itself, once.
func (a *API) logStoreError(err error, apiErr *httpkit.Error) {
	var qe *eventql.Error
	switch {
	case apiErr == httpkit.ErrUnexpected:
		a.log.Error("store operation failed", zap.Error(err))
	case errors.As(err, &qe) && qe.Err != nil && !errors.Is(err, store.ErrUnavailable):
		a.log.Error("precondition query failed to read", zap.Error(qe.Err))
	}
}

// translateStoreError translates an error of the store into the response
// the API gives for it, and the outcome label of write metrics. Its texts
// never carry the text of an unexpected error.
func translateStoreError(err error) (*httpkit.Error, string) {
	var (
		apiErr    *httpkit.Error
		invalid   *store.InvalidPreconditionError
		failure   *store.FailureError
		errno     syscall.Errno
		candidate *store.CandidateConflictError
		existing  *store.ExistingConflictError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr, resultInvalid
	case errors.Is(err, store.ErrUnavailable):
		// Also a precondition query that could not read the database: the
		// request was not at fault, and may be sent again.
		return errUnreachable, resultUnavailable
	case errors.As(err, &invalid):
		return httpkit.Errorf(http.StatusBadRequest, "%s", invalid.Error()), resultInvalid
	case errors.As(err, &candidate):
		return httpkit.Errorf(http.StatusConflict, "schema conflict: event candidate does not match schema: %s", candidate.Msg), resultSchemaConflict
	case errors.As(err, &existing):
		return httpkit.Errorf(http.StatusConflict, "schema conflict: existing events do not match schema: %d: %s", existing.ID, existing.Msg), resultSchemaConflict
	case errors.Is(err, store.ErrSchemaExists):
		return httpkit.Errorf(http.StatusConflict, "schema conflict: schema already exists"), resultSchemaConflict
	case errors.Is(err, store.ErrTooManySchemas):
		return httpkit.Errorf(http.StatusConflict, "state conflict: too many event schemas"), resultSchemaConflict
	case errors.Is(err, store.ErrPreconditionFailed):
		return httpkit.Errorf(http.StatusConflict, "state conflict: precondition failed"), resultPreconditionFailed
	case errors.Is(err, store.ErrClosed):
		return httpkit.ErrShuttingDown, resultUnavailable
	case errors.Is(err, store.ErrReadOnly):
		return httpkit.ErrReadOnly, resultUnavailable
	case errors.Is(err, store.ErrRestoring):
		return httpkit.ErrRestoring, resultUnavailable
	case errors.As(err, &failure) && failure.Full:
		detail := "disk full"
		if errors.As(err, &errno) {
			detail = errno.Error()
		}
		return httpkit.Errorf(http.StatusInsufficientStorage, "insufficient storage: %s", detail), resultStorageError
	case errors.Is(err, store.ErrStorageFailure):
		return httpkit.Errorf(http.StatusInternalServerError, "internal error: storage failure"), resultStorageError
	}
	return httpkit.ErrUnexpected, resultStorageError
}
