package store

import (
	"fmt"
	"math"
	"strings"
	"time"

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

// SubjectChild is a direct child of a subject in the subject tree.
type SubjectChild struct {
	// Subject is the child's subject.
	Subject string
	// HasEvents is false for an implicit subject: one that only lies
	// above subjects with events.
	HasEvents bool
	// HasChildren reports whether subjects lie below it.
	HasChildren bool
}

// SubjectChildren returns the direct children of parent in tree order
// (siblings by segment byte order), implicit ones included, starting after
// the child after ("" from the first; a subject deeper below parent stands
// for the child above it), at most limit of them, and whether more follow.
// It seeks from child to child past their subtrees, so its cost grows with
// the children it returns, not with the subjects below them.
func (s *Store) SubjectChildren(parent, after string, limit int) (children []SubjectChild, more bool, err error) {
	if limit <= 0 {
		return nil, false, fmt.Errorf("subject children of %s: limit %d is not positive", parent, limit)
	}
	if after != "" && (after == parent || !Within(parent, after)) {
		return nil, false, fmt.Errorf("subject children of %s: %s is not below it", parent, after)
	}
	seeker := s.backend.SubjectSeeker(parent)
	defer func() {
		if cerr := seeker.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("subject children of %s: %w", parent, cerr)
		}
	}()
	seek := func(key string) (string, bool) {
		if err != nil {
			return "", false
		}
		var subject string
		var ok bool
		subject, ok, err = seeker.Seek(key)
		return subject, ok
	}
	var subject string
	var ok bool
	if after == "" {
		subject, ok = seek(pastOwn(parent))
	} else {
		subject, ok = seek(pastSubtree(childOf(parent, after)))
	}
	for ok && err == nil {
		if len(children) == limit {
			return children, true, nil
		}
		child := SubjectChild{Subject: childOf(parent, subject), HasEvents: true, HasChildren: true}
		if subject == child.Subject {
			// The next subject after the child's own events is either below
			// it or already the next child.
			subject, ok = seek(pastOwn(child.Subject))
			if child.HasChildren = ok && Within(child.Subject, subject); !child.HasChildren {
				children = append(children, child)
				continue
			}
		} else {
			child.HasEvents = false
		}
		children = append(children, child)
		subject, ok = seek(pastSubtree(child.Subject))
	}
	if err != nil {
		return nil, false, fmt.Errorf("subject children of %s: %w", parent, err)
	}
	return children, false, nil
}

// SubjectMatches is a page of a subject search.
type SubjectMatches struct {
	// Subjects are the matches of the page, in tree order.
	Subjects []string
	// Next is the subject to continue after (the last one examined) while
	// the search is not Complete.
	Next string
	// Complete reports that no subject after the page matches.
	Complete bool
}

// SearchSubjects returns the subjects of base in read-subjects order
// (Subjects, implicit ones included) that follow after ("" from the
// first) and whose text contains contains, with ASCII letters compared in
// any case; a contains that begins with "/" is instead a prefix of the
// subject text, matched exactly, which the search seeks to. It stops at
// limit matches or once budget has passed, and tells where to continue.
func (s *Store) SearchSubjects(base, contains, after string, limit int, budget time.Duration) (m SubjectMatches, err error) {
	if limit <= 0 {
		return SubjectMatches{}, fmt.Errorf("search subjects of %s: limit %d is not positive", base, limit)
	}
	deadline := time.Now().Add(budget)
	prefix := strings.HasPrefix(contains, "/")
	seeker := s.backend.SubjectSeeker(base)
	defer func() {
		if cerr := seeker.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("search subjects of %s: %w", base, cerr)
		}
	}()
	var key string
	if after != "" {
		key = pastOwn(after)
	}
	if prefix {
		key = max(key, TreeKey(contains))
	}
	// prev is the subject examined last: its ancestors and itself were
	// examined before, as read-subjects lists them.
	prev := after
	for examined := 1; ; examined++ {
		subject, ok, err := seeker.Seek(key)
		if err != nil {
			return SubjectMatches{}, fmt.Errorf("search subjects of %s: %w", base, err)
		}
		if !ok || prefix && !strings.HasPrefix(subject, contains) {
			return SubjectMatches{Subjects: m.Subjects, Complete: true}, nil
		}
		for _, a := range lineage(base, subject) {
			if prev != "" && covers(a, prev) {
				continue
			}
			prev = a
			if prefix && strings.HasPrefix(a, contains) || !prefix && containsFold(a, contains) {
				m.Subjects = append(m.Subjects, a)
			}
			if len(m.Subjects) == limit {
				m.Next = a
				return m, nil
			}
		}
		if examined%64 == 0 && time.Now().After(deadline) {
			m.Next = prev
			return m, nil
		}
		key = pastOwn(subject)
	}
}

// pastOwn is the tree key from which on the subjects below subject follow
// it: past its own entries.
func pastOwn(subject string) string { return TreeKey(subject) + "\x01" }

// pastSubtree is the tree key from which on the subjects after subject's
// subtree follow; nothing follows the subtree of "/", whose key is
// returned as the greatest of all.
func pastSubtree(subject string) string {
	if subject == "/" {
		return "\xff"
	}
	return TreeKey(subject) + "\x02"
}

// childOf returns the child of parent that is subject or lies above it;
// subject lies below parent.
func childOf(parent, subject string) string {
	start := len(parent) + 1
	if parent == "/" {
		start = 1
	}
	if i := strings.IndexByte(subject[start:], '/'); i >= 0 {
		return subject[:start+i]
	}
	return subject
}

// containsFold reports whether s contains sub, ASCII letters compared in
// any case.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for j < n && lowerASCII(s[i+j]) == lowerASCII(sub[j]) {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
