package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Feature state is the store's one primitive for durable state that is not
// events: records under keys in named spaces, each with a version. A
// request changes it with fenced puts and deletes (Change) that the writer
// decides in queue order with the request's events and commits in the same
// atomic backend write; readers read the committed records through the
// Reader (Store.State, Store.States); nodes of a shared backend learn of
// other nodes' changes through Store.OnStateChanged. Event schemas are one
// such space (SchemaSpace); a new kind of state registers nothing and
// changes neither the writer nor a backend, see docs/architecture.md.

// AnyVersion as a Change's Expect puts or deletes whatever version the
// record has, or whether it exists.
const AnyVersion = ^uint64(0)

// Change asks for a put or a delete of one record of feature state.
type Change struct {
	// Space and Key name the record: UTF-8 without 0x00 bytes, which
	// every backend keeps as text; the space is not empty.
	Space, Key string
	// Value is the new value; nil deletes the record.
	Value []byte
	// Expect is the version the record must have for the change to be
	// made: 0 that it does not exist, AnyVersion that anything goes. It
	// fences a change against every change made since its author read the
	// record.
	Expect uint64
}

// StateConflictError refuses a request one of whose Changes did not find
// the version it expected; nothing of the request is stored.
type StateConflictError struct {
	Space, Key string
	// Expected is the Change's Expect, Actual the record's version (0 for
	// none).
	Expected, Actual uint64
}

// Error describes the conflict.
func (e *StateConflictError) Error() string {
	return fmt.Sprintf("state %s/%s has version %d, not %d", e.Space, e.Key, e.Actual, e.Expected)
}

// Request is one request of the writer: events to append (with their
// preconditions), feature state to change, or both, all or nothing.
type Request struct {
	// Events are appended atomically if each matches the schema of its
	// type and every precondition holds.
	Events        []event.Candidate
	Preconditions []Precondition
	// Changes are made if each finds the version it expects.
	Changes []Change
	// Check, unless nil, is the request's own rule: the writer calls it
	// once the rest of the request holds, in queue order, and refuses the
	// request with its error. It sees the committed state and what the group
	// decided before the request (Group). A *FailureError from it stops
	// the store.
	Check func(*Group) error
	// InReadOnly has the request decided also in read-only mode, which
	// refuses every other one; it is ignored for a request with events.
	InReadOnly bool
	// Applied, unless nil, is called by the writer once the request is
	// durable (and visible to readers), before its caller learns so. The
	// writer waits for it: it must be quick.
	Applied func()

	backfill []Posting // a data index build's keys of committed events
	erase    *erasing  // an erasure, which the writer commits alone in its group
}

// Group is the commit group a request is decided in, as its Check sees it.
type Group struct {
	s *Store
	g *groupState
}

// Committed returns the number of events committed before the group.
func (x *Group) Committed() uint64 { return x.s.head.Count }

// Written returns the events accepted earlier in the group.
func (x *Group) Written() []Written { return x.g.written }

// State returns the record of key in space with the changes accepted
// earlier in the group: found is false when it does not exist. A storage
// error comes back as a *FailureError.
func (x *Group) State(space, key string) (StateRecord, bool, error) {
	return x.s.stateIn(x.g, space, key)
}

// Changes returns how many changes of space the group accepted so far.
func (x *Group) Changes(space string) int { return x.g.spaces[space] }

// Commit hands r to the writer and returns the records of its events once
// it is durable. Query preconditions are evaluated here, in the caller's
// goroutine, on the state durable now; the writer only checks that
// nothing they read has changed since (see decideConditions). It fails with
// a *CandidateConflictError, ErrPreconditionFailed, an
// *InvalidPreconditionError, a *StateConflictError, the error of r.Check,
// ErrReadOnly, ErrClosed, a *FailureError, or ctx's error while waiting for
// a place in the queue (then nothing was written).
func (s *Store) Commit(ctx context.Context, r Request) ([]event.Record, error) {
	if err := s.refusal(r); err != nil {
		return nil, err
	}
	if err := checkChanges(r.Changes); err != nil {
		return nil, err
	}
	// Validate here, in the caller's goroutine; the writer checks again only
	// if a schema was registered in between.
	version := s.schemas.version.Load()
	if err := s.validate(ctx, r.Events); err != nil {
		return nil, err
	}
	var caller trace.SpanContext
	if s.tracer != nil {
		caller = trace.SpanContextFromContext(ctx)
	}
	for {
		w := &writeRequest{Request: r, schemaVersion: version, caller: caller, done: make(chan struct{})}
		stale, err := s.decideConditions(ctx, w)
		if err != nil {
			return nil, err
		}
		if stale {
			continue
		}
		if err := s.enqueue(ctx, w); err != nil {
			return nil, err
		}
		<-w.done // once queued, the outcome is decided by the writer, not the caller
		if w.err != errStaleVerdict {
			return w.records, w.err
		}
	}
}

// checkChanges refuses a change without a space, or whose space or key is
// not UTF-8 without 0x00 bytes.
func checkChanges(changes []Change) error {
	text := func(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }
	for _, c := range changes {
		if c.Space == "" || !text(c.Space) || !text(c.Key) {
			return fmt.Errorf("state %q/%q: a space and a key of UTF-8 without 0x00 bytes, the space not empty", c.Space, c.Key)
		}
	}
	return nil
}

// State returns the committed record of key in space.
func (s *Store) State(space, key string) (StateRecord, bool, error) {
	return s.backend.State(space, key)
}

// States iterates the committed records of space whose key starts with
// prefix, in key byte order.
func (s *Store) States(space, prefix string) StateIterator {
	return s.backend.States(space, prefix)
}

// StateReader reads committed records of feature state.
type StateReader interface {
	// State returns the record of key in space, false if there is none.
	State(space, key string) (StateRecord, bool, error)
	// States iterates the records of space whose key starts with prefix,
	// in key byte order.
	States(space, prefix string) StateIterator
}

// StateViewer is a Backend that reads feature state as of one moment.
type StateViewer interface {
	// ViewStates calls fn with a reader whose every read sees the records
	// as one moment left them, whatever is committed meanwhile. The reader
	// is valid until fn returns.
	ViewStates(fn func(r StateReader) error) error
}

// ViewStates calls fn with a reader of the committed records of feature
// state as one moment left them: records read one after the other agree,
// although other nodes commit in between (StateViewer). On a backend that
// cannot, fn reads the backend as State and States do.
func (s *Store) ViewStates(fn func(r StateReader) error) error {
	if v, ok := s.backend.(StateViewer); ok {
		return v.ViewStates(fn)
	}
	return fn(s.backend)
}

// OnStateChanged registers fn, which the writer calls (on a shared backend)
// after it followed commits of other nodes that changed a record of one of
// spaces, so that what a feature keeps in memory of them follows those
// commits; commits that changed other spaces only do not call it. It is
// called too when the store cannot tell which spaces changed, and after an
// exclusive use of the backend (Exclusive). fn runs in the writer, while
// the store holds the backend's lock (on PostgreSQL, the head row's): it
// must be quick. An error from fn stops the store. Register before Start.
func (s *Store) OnStateChanged(spaces []string, fn func() error) {
	s.stateFollowers = append(s.stateFollowers, stateFollower{spaces: slices.Clone(spaces), fn: fn})
}

// stateFollower is a function registered with OnStateChanged.
type stateFollower struct {
	spaces []string
	fn     func() error
}

// stateIn returns the record of key in space as the group left it: changed
// earlier in the group, else committed.
func (s *Store) stateIn(g *groupState, space, key string) (StateRecord, bool, error) {
	if i, ok := g.changed[stateKey{space, key}]; ok {
		r := g.state[i]
		return r, r.Value != nil, nil
	}
	r, found, err := s.backend.State(space, key)
	if err != nil {
		return StateRecord{}, false, newFailureError(fmt.Errorf("read state %s/%s: %w", space, key, err))
	}
	return r, found, nil
}

// stateKey names a record of feature state.
type stateKey struct{ space, key string }

// checkFences returns a *StateConflictError unless every change of w finds
// the version it expects, the group's earlier changes included.
func (s *Store) checkFences(w *writeRequest, g *groupState) error {
	for _, c := range w.Changes {
		if c.Expect == AnyVersion {
			continue
		}
		r, found, err := s.stateIn(g, c.Space, c.Key)
		if err != nil {
			return err
		}
		actual := uint64(0)
		if found {
			actual = r.Version
		}
		if actual != c.Expect {
			return &StateConflictError{Space: c.Space, Key: c.Key, Expected: c.Expect, Actual: actual}
		}
	}
	return nil
}

// applyChanges adds the changes of an accepted request to the group, each
// with the next version.
func (g *groupState) applyChanges(changes []Change) {
	for _, c := range changes {
		g.head.States++
		r := StateRecord{Space: c.Space, Key: c.Key, Value: c.Value, Version: g.head.States}
		k := stateKey{c.Space, c.Key}
		if i, ok := g.changed[k]; ok {
			g.state[i] = r
		} else {
			g.changed[k] = len(g.state)
			g.state = append(g.state, r)
		}
		g.spaces[c.Space]++
	}
}

// followState calls the state followers of the spaces that other nodes
// changed: of changed, or, unless known, every follower.
func (s *Store) followState(changed []string, known bool) error {
	for _, f := range s.stateFollowers {
		if known && !slices.ContainsFunc(f.spaces, func(space string) bool { return slices.Contains(changed, space) }) {
			continue
		}
		if err := f.fn(); err != nil {
			return err
		}
	}
	return nil
}
