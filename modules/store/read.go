package store

import (
	"fmt"
	"math"
	"strings"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Bound limits the ids of a read.
type Bound struct {
	ID        uint64
	Inclusive bool
}

// FromLatest starts a read at the latest event with exactly Subject and Type.
type FromLatest struct {
	Subject string
	Type    string
	// ReadEverything reads as if the option were absent when there is no
	// such event; otherwise nothing is read then.
	ReadEverything bool
}

// ReadOptions select the events of a read.
type ReadOptions struct {
	Subject    string
	Recursive  bool
	Descending bool
	Lower      *Bound
	Upper      *Bound
	FromLatest *FromLatest
}

// Read returns an iterator over the events durable now that match opts.
func (s *Store) Read(opts ReadOptions) (RecordIterator, error) {
	count, err := s.visible(math.MaxUint64)
	if err != nil {
		return emptyIterator{}, err
	}
	from, to, ok, err := s.Range(opts.Lower, opts.Upper, opts.FromLatest, count)
	if err != nil || !ok {
		return emptyIterator{}, err
	}
	return s.backend.Scan(Scan{Subject: opts.Subject, Recursive: opts.Recursive, From: from, To: to, Descending: opts.Descending}), nil
}

// Range resolves the bounds of a read over the first count events into an
// inclusive id range; ok is false when nothing can match.
func (s *Store) Range(lower, upper *Bound, fromLatest *FromLatest, count uint64) (from, to uint64, ok bool, err error) {
	if count == 0 {
		return 0, 0, false, nil
	}
	from, to = 0, count-1
	if lower != nil {
		switch {
		case lower.Inclusive:
			from = max(from, lower.ID)
		case lower.ID == math.MaxUint64:
			return 0, 0, false, nil
		default:
			from = max(from, lower.ID+1)
		}
	}
	if upper != nil {
		switch {
		case upper.Inclusive:
			to = min(to, upper.ID)
		case upper.ID == 0:
			return 0, 0, false, nil
		default:
			to = min(to, upper.ID-1)
		}
	}
	if fromLatest != nil {
		id, found, err := s.backend.LatestID(fromLatest.Subject, fromLatest.Type, count-1)
		switch {
		case err != nil:
			return 0, 0, false, err
		case found:
			from = max(from, id)
		case !fromLatest.ReadEverything:
			return 0, 0, false, nil
		}
	}
	return from, to, from <= to, nil
}

// LatestID returns the id of the latest durable event with exactly subject
// and type.
func (s *Store) LatestID(subject, eventType string) (uint64, bool, error) {
	count, err := s.visible(math.MaxUint64)
	if err != nil || count == 0 {
		return 0, false, err
	}
	return s.backend.LatestID(subject, eventType, count-1)
}

// Scan iterates the durable events selected by sc, whose To is capped at
// the durable head. Recent events come from memory, older ones from storage.
func (s *Store) Scan(sc Scan) RecordIterator {
	count, err := s.visible(sc.To)
	if err != nil {
		return failedIterator{err}
	}
	return scanUpTo(s.backend, s.recent, count, sc)
}

// visible returns the number of events a read of ids up to to may see now:
// the durable ones, and on a shared backend also those other nodes
// committed that this store has not followed yet, so that a write
// acknowledged by any node is in every later read on this one. The shared
// backend is asked only when the read reaches beyond the durable head: an
// observer, which reads up to it, costs the database nothing. When the
// shared backend cannot tell its head (a node cut off from the database),
// the read fails rather than answer from an older state.
func (s *Store) visible(to uint64) (uint64, error) {
	n := s.Durable()
	if s.shared && to >= n {
		head, err := s.backend.Head()
		if err != nil {
			return 0, fmt.Errorf("learn what the other nodes committed: %w", err)
		}
		if !head.Restoring && head.Count > n {
			n = head.Count
		}
	}
	return n, nil
}

type emptyIterator struct{}

func (emptyIterator) Next() bool           { return false }
func (emptyIterator) Record() event.Record { return event.Record{} }
func (emptyIterator) Close() error         { return nil }

// failedIterator is a read that failed before it began.
type failedIterator struct{ err error }

func (failedIterator) Next() bool           { return false }
func (failedIterator) Record() event.Record { return event.Record{} }
func (it failedIterator) Close() error      { return it.err }

// Subjects iterates base and every subject within it that has events or
// lies above one that has (implicit subjects), in depth-first order with
// siblings sorted by segment byte order. Nothing is returned when no event
// lies within base.
func (s *Store) Subjects(base string) StringIterator {
	return &subjectTree{base: base, subjects: s.backend.Subjects(base)}
}

// subjectTree adds the implicit ancestors (from base down) to the subjects
// of a backend, which come in depth-first order.
type subjectTree struct {
	base     string
	subjects StringIterator
	pending  []string
	prev     string // the last subject emitted; its ancestors are emitted
	current  string
}

func (t *subjectTree) Next() bool {
	for len(t.pending) == 0 {
		if !t.subjects.Next() {
			return false
		}
		subject := t.subjects.Value()
		for _, a := range lineage(t.base, subject) {
			if t.prev == "" || !covers(a, t.prev) {
				t.pending = append(t.pending, a)
			}
		}
	}
	t.current, t.pending = t.pending[0], t.pending[1:]
	t.prev = t.current
	return true
}

func (t *subjectTree) Value() string { return t.current }
func (t *subjectTree) Close() error  { return t.subjects.Close() }

// lineage returns base, the subjects between base and subject, and subject.
func lineage(base, subject string) []string {
	out := []string{base}
	rest := strings.TrimPrefix(subject, base)
	current := strings.TrimSuffix(base, "/")
	for _, segment := range strings.Split(strings.Trim(rest, "/"), "/") {
		if segment == "" {
			continue
		}
		current += "/" + segment
		out = append(out, current)
	}
	return out
}

// covers reports whether ancestor is subject or one of its ancestors.
func covers(ancestor, subject string) bool {
	return ancestor == subject || ancestor == "/" || strings.HasPrefix(subject, ancestor+"/")
}

// Within reports whether subject is base or lies below it.
func Within(base, subject string) bool { return covers(base, subject) }
