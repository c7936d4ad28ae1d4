package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// PreconditionKind names a precondition type.
type PreconditionKind int

// Precondition types.
const (
	// SubjectPristine holds when no event has exactly the subject.
	SubjectPristine PreconditionKind = iota + 1
	// SubjectPopulated holds when an event has exactly the subject.
	SubjectPopulated
	// SubjectOnEventID holds when the latest event of exactly the subject has the id.
	SubjectOnEventID
	// ConditionHolds holds when the precondition's Condition holds.
	ConditionHolds
)

// Precondition is a condition a write requires of the committed events.
type Precondition struct {
	Kind    PreconditionKind
	Subject string
	EventID uint64
	// Condition is evaluated for ConditionHolds.
	Condition Condition
}

// Condition is a precondition decided by a query over the state a write
// commits on: the committed events plus the earlier writes of its commit
// group, not the write's own events. An error makes the write fail with an
// *InvalidPreconditionError. Holds must bound its own running time.
//
// The store evaluates a Condition outside the writer, on the state durable
// when the write arrives, and the writer accepts that verdict only if no
// event committed since, and none written earlier in the group, is one the
// condition is affected by; otherwise the condition is evaluated again.
type Condition interface {
	// Holds evaluates the condition on state. A write whose verdicts go
	// stale evaluates its conditions again, round after round: Holds bounds
	// the time of all its evaluations together (or ctx does).
	Holds(ctx context.Context, state *View) (bool, error)
	// Affects reports whether writing w could change what the last Holds
	// decided: whether w is among the events the condition read. It is
	// called by the writer, so it must be quick; when in doubt it answers
	// true. It is never called while Holds runs.
	Affects(w Written) bool
	// ReadsSchemas reports whether the condition reads the registered
	// schemas, which a registration then changes.
	ReadsSchemas() bool
}

// InvalidPreconditionError tells that a Condition could not be decided.
type InvalidPreconditionError struct {
	Err error
}

func (e *InvalidPreconditionError) Error() string { return "invalid precondition: " + e.Err.Error() }

// Unwrap returns the condition's error.
func (e *InvalidPreconditionError) Unwrap() error { return e.Err }

// errStaleVerdict sends a write back to its caller for another round: a
// verdict it carries was made on a state that has changed where it reads.
var errStaleVerdict = errors.New("stale precondition verdict")

// verdict is what a query precondition decided on a snapshot.
type verdict struct {
	holds   bool
	err     error
	count   uint64 // events in the snapshot
	schemas uint64 // schema registry version, read before the snapshot
}

// decideConditions evaluates the query preconditions of w on the state
// durable now, in the caller's goroutine, and carries the verdicts forward
// over what was committed meanwhile. stale tells that a write committed
// meanwhile affects a verdict: the caller goes round again. It fails only
// when ctx ends.
//
// The writer never evaluates a condition: it only checks that a verdict
// still stands (stands) and sends the write back for another round if not.
// Under a steady stream of writes into what a condition reads, the rounds
// go on until the condition's own time limit, which counts from its first
// evaluation, ends them with its error; the other writes never wait for it.
func (s *Store) decideConditions(ctx context.Context, w *writeRequest) (stale bool, err error) {
	var view *View
	for i, p := range w.Preconditions {
		if p.Kind != ConditionHolds {
			continue
		}
		if view == nil {
			// Evaluations that read little run at once; one that reads
			// much takes a turn among the heavy ones (View.WaitTurn).
			w.verdicts = make([]verdict, len(w.Preconditions))
			view = s.View()
			view.turn = &turn{slots: s.evaluating}
			defer view.turn.release()
		}
		holds, err := p.Condition.Holds(ctx, view)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		w.verdicts[i] = verdict{holds: holds, err: err, count: view.count, schemas: view.schemaVersion}
	}
	for i, p := range w.Preconditions {
		if p.Kind == ConditionHolds && w.verdicts[i].err == nil && !s.carry(&w.verdicts[i], p.Condition) {
			return true, nil
		}
	}
	return false, nil
}

// affects reports whether r, a committed record, affects c; a record that
// cannot be read affects every condition.
func affects(c Condition, r event.Record, sc *jsonscan.Scanner) bool {
	w, err := writtenOf(r, sc)
	return err != nil || c.Affects(w)
}

// carryLag is how many events the writer may have to check a verdict
// against: decideConditions carries a verdict forward, outside the writer,
// until it lags the durable head by no more than this.
const carryLag = 1024

// carry moves a verdict forward over the events committed since it was
// made, as long as none of them affects the condition, so that the writer
// checks only the few committed after; false when one affects it (or a
// registration changed the schemas the condition reads).
func (s *Store) carry(v *verdict, c Condition) bool {
	var sc jsonscan.Scanner
	for {
		now := s.Durable()
		if c.ReadsSchemas() && v.schemas != s.schemas.version.Load() {
			return false
		}
		if now-v.count <= carryLag {
			return true
		}
		it := s.Scan(Scan{From: v.count, To: now - 1})
		affected := false
		for !affected && it.Next() {
			affected = affects(c, it.Record(), &sc)
		}
		if err := it.Close(); err != nil || affected {
			return false
		}
		v.count = now
	}
}

// checkPreconditions decides the preconditions of w, in order, against the
// committed events and the group's earlier writes.
func (s *Store) checkPreconditions(w *writeRequest, g *groupState) error {
	for i, p := range w.Preconditions {
		var (
			holds bool
			err   error
		)
		switch p.Kind {
		case ConditionHolds:
			holds, err = s.checkCondition(p.Condition, w.verdicts, i, g)
		case SubjectPristine, SubjectPopulated, SubjectOnEventID:
			latest, found, err := s.latest(p.Subject, g)
			if err != nil {
				return newFailureError(err)
			}
			holds = p.Kind == SubjectPristine && !found || p.Kind == SubjectPopulated && found ||
				p.Kind == SubjectOnEventID && found && latest == p.EventID
		default:
			return fmt.Errorf("unknown precondition kind %d", p.Kind)
		}
		if err != nil {
			return err
		}
		if !holds {
			return ErrPreconditionFailed
		}
	}
	return nil
}

// checkCondition takes the verdict made outside the writer if it still
// stands, and sends the write back if it does not. A condition that could
// not be decided (its time limit, a runtime error) fails the write however
// the state moved since: nothing is written either way, and evaluating it
// again under a steady stream of writes could go on for ever.
func (s *Store) checkCondition(c Condition, verdicts []verdict, i int, g *groupState) (bool, error) {
	v := verdicts[i]
	if v.err != nil {
		return false, &InvalidPreconditionError{Err: v.err}
	}
	if !s.stands(v, c, g) {
		return false, errStaleVerdict
	}
	return v.holds, nil
}

// stands reports whether a verdict made on an earlier state holds for the
// state the group commits on: nothing the condition reads has changed.
func (s *Store) stands(v verdict, c Condition, g *groupState) bool {
	if c.ReadsSchemas() && (v.schemas != s.schemas.version.Load() || len(g.registered) > 0) {
		return false
	}
	if v.count < s.head.Count {
		affected, covered := s.recent.any(v.count, s.head.Count, c.Affects)
		if affected || !covered {
			return false
		}
	}
	for _, w := range g.written {
		if c.Affects(w) {
			return false
		}
	}
	return true
}
