package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Limits of the writer.
const (
	// QueueLength is how many write requests may wait for the writer.
	QueueLength = 4096
	// MaxGroupEvents caps the events of one group commit.
	MaxGroupEvents = 50_000
)

// Store is the event store. Create it with New, open it and run its writer
// with Start, and end it with Close.
type Store struct {
	open    Opener
	backend Backend
	log     *zap.Logger
	rec     Recorder
	now     func() time.Time

	queue   chan *writeRequest
	retaken chan *writeRequest // requests refuseWhileWaiting took from queue after the wait ended
	mu      sync.RWMutex       // held for reading while sending to queue; Close takes it to stop sends
	closed  bool
	stop    chan struct{}
	stopped chan struct{}

	durable atomic.Pointer[Head]          // the durable head: ids below its Count are readable
	changed atomic.Pointer[chan struct{}] // closed and replaced when durable advances
	failure atomic.Pointer[FailureError]
	// unreachable is set while a shared backend cannot be reached.
	unreachable atomic.Bool
	// shared tells that other nodes write the backend too.
	shared bool
	// readOnly refuses writes and registrations until restart.
	readOnly atomic.Bool
	size     sizeCache
	recent   *window   // the latest durable records, for readers near the head
	schemas  *registry // the committed schemas by event type
	// dataIndexes are the committed data indexes; build wakes their
	// builder (dataindexbuild.go).
	dataIndexes *dataIndexes
	build       chan struct{}
	built       chan struct{} // closed when the builder ended

	writing   sync.Mutex    // held by the writer while it commits, and by a restore
	erasures  sync.Mutex    // held by Erase: erasures run one at a time
	head      Head          // owned by the writer goroutine
	latestIDs *latestCache  // owned by the writer goroutine
	lastGroup int           // requests in the writer's previous group; owned by the writer goroutine
	held      *writeRequest // an erasure admit left for the next group; owned by the writer goroutine

	evaluating chan struct{} // a slot per heavy query precondition evaluated at once (View.WaitTurn)

	stateFollowers []stateFollower // OnStateChanged; set before Start
	tracer         trace.Tracer    // Trace; nil: no spans
}

// writeRequest is a Request waiting for the writer, and its outcome.
type writeRequest struct {
	Request
	verdicts      []verdict // of the query preconditions, by index; nil when there are none
	schemaVersion uint64    // of the registry the events were validated against
	enqueued      time.Time
	caller        trace.SpanContext // the span of the caller's context, with tracing on
	records       []event.Record
	err           error
	done          chan struct{}
}

// Recorder receives the writer's measurements, which the service turns
// into metrics. The writer goroutine calls it, so it must be quick.
type Recorder interface {
	// Committed reports a synced commit of a group and its number of
	// events, and how long the backend took for it.
	Committed(events int, took time.Duration)
	// Acknowledged reports how long an accepted request took
	// from entering the queue to its acknowledgement.
	Acknowledged(took time.Duration)
}

// nopRecorder is the Recorder of a Store created without one.
type nopRecorder struct{}

func (nopRecorder) Committed(int, time.Duration) {}
func (nopRecorder) Acknowledged(time.Duration)   {}

// DefaultMaxSchemas is how many event schemas a store takes by default.
const DefaultMaxSchemas = 10_000

// Memory bounds what a Store keeps in memory: its caches and its schema
// registry; a zero field takes its default.
type Memory struct {
	// WindowBytes bounds the record bytes of the live window that readers
	// near the head, observers above all, read from (DefaultWindowBytes).
	WindowBytes int
	// LatestSubjects is how many subjects the writer remembers the latest
	// event id of, for subject preconditions (DefaultLatestCacheSize).
	LatestSubjects int
	// MaxSchemas is how many event schemas may be registered, by
	// registrations and restores together (DefaultMaxSchemas); beyond it a
	// registration fails with ErrTooManySchemas. A store that holds more
	// (registered under a higher limit) keeps them all.
	MaxSchemas int
	// MaxDataIndexes is how many data indexes may be registered
	// (DefaultMaxDataIndexes); beyond it a registration fails with
	// ErrTooManyDataIndexes.
	MaxDataIndexes int
}

// withDefaults returns m with its zero fields set to their defaults.
func (m Memory) withDefaults() Memory {
	if m.WindowBytes <= 0 {
		m.WindowBytes = DefaultWindowBytes
	}
	if m.LatestSubjects <= 0 {
		m.LatestSubjects = DefaultLatestCacheSize
	}
	if m.MaxSchemas <= 0 {
		m.MaxSchemas = DefaultMaxSchemas
	}
	if m.MaxDataIndexes <= 0 {
		m.MaxDataIndexes = DefaultMaxDataIndexes
	}
	return m
}

// New returns a Store that opens its backend with open when it starts,
// keeps its caches and schemas within mem and reports its measurements to
// rec (none when rec is nil).
func New(open Opener, log *zap.Logger, rec Recorder, mem Memory) *Store {
	if rec == nil {
		rec = nopRecorder{}
	}
	mem = mem.withDefaults()
	s := &Store{
		open:        open,
		log:         log,
		rec:         rec,
		evaluating:  make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		now:         time.Now,
		queue:       make(chan *writeRequest, QueueLength),
		retaken:     make(chan *writeRequest),
		stop:        make(chan struct{}),
		stopped:     make(chan struct{}),
		recent:      newWindow(mem.WindowBytes),
		latestIDs:   newLatestCache(mem.LatestSubjects),
		schemas:     newRegistry(mem.MaxSchemas),
		dataIndexes: newDataIndexes(mem.MaxDataIndexes),
		build:       make(chan struct{}, 1),
		built:       make(chan struct{}),
	}
	s.durable.Store(&Head{LastHash: event.ZeroHash})
	changed := make(chan struct{})
	s.changed.Store(&changed)
	s.OnStateChanged([]string{SchemaSpace}, func() error { return s.loadSchemas(s.backend) })
	s.OnStateChanged([]string{DataIndexSpace}, func() error { return s.loadDataIndexes(s.backend) })
	return s
}

// checkHead verifies that the last event exists, hashes to the head hash and
// links to its predecessor, and, unless other nodes share the backend (and
// may have appended since head was read), that no event lies beyond the head.
func checkHead(b Backend, head Head) error {
	if !b.Shared() {
		if _, found, err := b.Record(head.Count); err != nil {
			return fmt.Errorf("check head: %w", err)
		} else if found {
			return corruption("event %d lies beyond the head (%d events)", head.Count, head.Count)
		}
	}
	if head.Count == 0 {
		return nil
	}
	last, err := recordAt(b, head.Count-1)
	if err != nil {
		return err
	}
	fields, err := event.Decode(last)
	if err != nil {
		return corruption("event %d: %v", last.ID, err)
	}
	if err := fields.Verify(); err != nil {
		return corruption("event %d: %v", last.ID, err)
	}
	if fields.Hash != head.LastHash {
		return corruption("head hash %s differs from the hash %s of event %d", head.LastHash, fields.Hash, last.ID)
	}
	predecessor := event.ZeroHash
	if head.Count > 1 {
		prev, err := recordAt(b, head.Count-2)
		if err != nil {
			return err
		}
		prevFields, err := event.Decode(prev)
		if err != nil {
			return corruption("event %d: %v", prev.ID, err)
		}
		predecessor = prevFields.Hash
	}
	if fields.PredecessorHash != predecessor {
		return corruption("event %d links to %s, not to the hash %s of its predecessor", last.ID, fields.PredecessorHash, predecessor)
	}
	return nil
}

func recordAt(b Backend, id uint64) (event.Record, error) {
	r, found, err := b.Record(id)
	switch {
	case err != nil:
		return event.Record{}, fmt.Errorf("read event %d: %w", id, err)
	case !found:
		return event.Record{}, corruption("event %d is missing", id)
	}
	return r, nil
}

// Start opens the backend, checks that the head matches the last stored
// event (a mismatch is a *CorruptionError), and runs the writer.
func (s *Store) Start(context.Context) error {
	backend, err := s.open()
	if err != nil {
		return err
	}
	head, err := backend.Head()
	if err == nil && head.Restoring {
		s.log.Warn("a restore was cut off: emptying the store")
		if err = backend.Reset(); err == nil {
			head, err = backend.Head()
		}
	}
	if err == nil {
		err = checkHead(backend, head)
	}
	if err == nil {
		err = s.loadSchemas(backend)
	}
	if err == nil {
		err = s.loadDataIndexes(backend)
	}
	if err != nil {
		return errors.Join(err, backend.Close())
	}
	s.backend, s.head = backend, head
	s.shared = backend.Shared()
	s.durable.Store(&head)
	go s.run()
	go s.builder()
	if w, ok := backend.(Waiter); ok {
		go s.refuseWhileWaiting(w)
	}
	return nil
}

// Close stops accepting writes, lets the writer finish every queued one,
// and closes the backend.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	alreadyClosed := s.closed
	s.closed = true
	s.mu.Unlock()
	if alreadyClosed {
		return nil
	}
	close(s.stop)
	for _, ended := range []struct {
		done <-chan struct{}
		what string
	}{{s.stopped, "the writer"}, {s.built, "the data index builder"}} {
		select {
		case <-ended.done:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", ended.what, ctx.Err())
		}
	}
	if err := s.backend.Close(); err != nil && s.failure.Load() == nil {
		return fmt.Errorf("close backend: %w", err)
	}
	return nil
}

// Exclusive runs fn while the writer pauses (it waits for fn, as writes
// do), with the backend and its committed head, the other nodes' commits
// followed. fn may commit to the backend as the writer does, and empty it
// (Reset) of what it committed; it may add feature state, not change or
// remove what the store holds. When fn returns, the store starts over from
// the backend's head, as after a restart: its caches emptied, its feature
// state read again (OnStateChanged). A restore (package restore) is such a
// function. It fails with ErrReadOnly, a *FailureError, or fn's error.
func (s *Store) Exclusive(ctx context.Context, fn func(b Backend, head Head) error) error {
	if err := s.refusal(Request{}); err != nil {
		return err
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	tx, err := s.backend.Begin(ctx, s.head.Count)
	if err != nil {
		return err
	}
	err = s.follow(tx.Head(), tx.Followed(), txSpaces(tx))
	tx.Rollback()
	if err != nil {
		return err
	}
	err = fn(s.backend, s.head)
	head, headErr := s.backend.Head()
	if headErr == nil && head.Restoring {
		headErr = errors.New("the backend is left marked as restoring")
	}
	if headErr == nil {
		headErr = s.followState(nil, false) // fn may have added state of any space
	}
	if headErr != nil {
		return s.fail(errors.Join(err, fmt.Errorf("take over the backend after an exclusive use: %w", headErr)))
	}
	s.head = head
	s.recent.reset()
	s.latestIDs.purge()
	s.advance(nil, true)
	return err
}

// SchemaLimit returns how many schemas may be registered (Memory.MaxSchemas).
func (s *Store) SchemaLimit() int { return s.schemas.limit }

// Backend returns the store's backend, for reads beside the store's own
// (a verification); only the store writes it.
func (s *Store) Backend() Backend { return s.backend }

// Durable returns the number of durable events: ids below it are readable.
func (s *Store) Durable() uint64 { return s.durable.Load().Count }

// DurableHead returns the durable head: the number of durable events and
// the hash of the last one.
func (s *Store) DurableHead() Head { return *s.durable.Load() }

// Changed returns a channel that is closed when Durable next advances:
// commits of feature state alone, this node's or another's, do not close
// it (the feature that made them wakes its own readers). Take it before
// reading Durable so that no advance is missed.
func (s *Store) Changed() <-chan struct{} { return *s.changed.Load() }

// Failure returns the error that stopped the store, or nil while it works.
func (s *Store) Failure() *FailureError { return s.failure.Load() }

// Write appends candidates atomically if each matches the schema of its
// type and every precondition holds, and returns their records once they
// are durable: Commit of a request of events only.
func (s *Store) Write(ctx context.Context, candidates []event.Candidate, preconditions []Precondition) ([]event.Record, error) {
	return s.Commit(ctx, Request{Events: candidates, Preconditions: preconditions})
}

// refusal returns why the store takes no request r now, or nil.
func (s *Store) refusal(r Request) error {
	if f := s.failure.Load(); f != nil {
		return f
	}
	if s.readOnly.Load() && (!r.InReadOnly || len(r.Events) > 0) {
		return ErrReadOnly
	}
	return nil
}

// EnterReadOnly puts the store into read-only mode until restart: from
// its return on, every write and registration fails with ErrReadOnly; those
// queued before it are committed first. Entering it again does nothing.
func (s *Store) EnterReadOnly(ctx context.Context) error {
	if s.readOnly.Load() {
		return nil
	}
	_, err := s.Commit(ctx, Request{
		Check: func(g *Group) error {
			g.g.readOnly = true // the rest of the group is decided as in read-only mode
			return nil
		},
		Applied: func() { s.readOnly.Store(true) },
	})
	if errors.Is(err, ErrReadOnly) { // entered meanwhile
		return nil
	}
	return err
}

// ReadOnly reports whether the store is in read-only mode.
func (s *Store) ReadOnly() bool { return s.readOnly.Load() }

func (s *Store) enqueue(ctx context.Context, w *writeRequest) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.backendWaiting() {
		// The writer waits for the database to come back; a write queued
		// now would wait as long. Nothing is stored: the client may retry.
		return errWaiting
	}
	w.enqueued = time.Now()
	select {
	case s.queue <- w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
