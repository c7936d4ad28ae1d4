package store

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// pollInterval is how often a store on a shared backend looks for commits
// of other nodes whose notification it may have missed.
const pollInterval = 500 * time.Millisecond

// next returns the head a commit after h starts from.
func (h Head) next() Head {
	h.Commits++
	return h
}

// same reports whether two heads name the same committed state.
func (h Head) same(o Head) bool {
	return h.Count == o.Count && h.LastHash == o.LastHash && h.Commits == o.Commits
}

// follow brings the store's state up to head, which other nodes of a shared
// backend committed: their feature state (the followers of the spaces they
// changed, OnStateChanged; the schemas among them), and their events into
// the live window and the latest-id cache; then readers and observers see
// them. read, unless nil, are the events from the store's head on as the
// backend read them with head; spaces tells which spaces of feature state
// they changed (Backend.ChangedSpaces), asked only when they changed some.
// Only commits that added events wake the observers (Changed): those of
// state alone, as the other nodes' lease renewals, leave them waiting. Only
// the writer goroutine calls it.
func (s *Store) follow(head Head, read []Written, spaces func(since uint64) ([]string, bool, error)) error {
	if head.same(s.head) {
		return nil
	}
	if head.Count < s.head.Count {
		// Not a *FailureError yet: the writer makes it one when it stops.
		return fmt.Errorf("the backend's head (%d events) is behind this store's (%d)", head.Count, s.head.Count)
	}
	if head.States != s.head.States {
		changed, known, err := spaces(s.head.States)
		if err != nil {
			return err
		}
		// Fewer changes than this store saw: the backend started over.
		known = known && head.States > s.head.States
		if err := s.followState(changed, known); err != nil {
			return err
		}
	}
	from := s.head.Count
	if head.Count-from > windowEvents {
		// Too many to remember: the cache cannot learn which subjects they
		// touched, so it starts over, and the window holds the newest.
		s.latestIDs.purge()
		s.recent.reset()
		from = head.Count - windowEvents
	}
	var written []Written
	if from == s.head.Count && uint64(len(read)) == head.Count-from && (len(read) == 0 || read[0].Record.ID == from) {
		written = read
	} else if head.Count > from {
		var sc jsonscan.Scanner
		it := s.backend.Scan(Scan{From: from, To: head.Count - 1})
		for it.Next() {
			w, err := writtenOf(it.Record(), &sc)
			if err != nil {
				id := it.Record().ID
				it.Close()
				return fmt.Errorf("follow event %d: %w", id, err)
			}
			w.Record.JSON = bytes.Clone(w.Record.JSON) // the iterator reuses its buffer
			written = append(written, w)
		}
		if err := it.Close(); err != nil {
			return err
		}
		if uint64(len(written)) != head.Count-from {
			return errors.Join(ErrUnavailable, fmt.Errorf("follow: read %d events of %d", len(written), head.Count-from))
		}
	}
	for _, w := range written {
		if w.Type == event.ErasedType && w.Record.ID > 0 {
			// Another node erased events before this one: the window may
			// hold their data, which reads take from storage from now on.
			s.recent.forget(0, w.Record.ID-1)
		}
	}
	events := head.Count != s.head.Count || head.LastHash != s.head.LastHash
	s.head = head
	s.advance(written, events)
	return nil
}

// txSpaces returns tx's ChangedSpaces in the form follow takes.
func txSpaces(tx Tx) func(uint64) ([]string, bool, error) {
	return func(since uint64) ([]string, bool, error) {
		spaces, known := tx.ChangedSpaces(since)
		return spaces, known, nil
	}
}

// advance makes written (contiguous, after the durable head) durable for
// readers and, if wake, wakes the observers.
func (s *Store) advance(written []Written, wake bool) {
	s.recent.add(written) // before the head moves, so that readers of the new head find them
	for _, w := range written {
		s.latestIDs.put(w.Subject, w.Record.ID, true)
	}
	head := s.head
	s.durable.Store(&head)
	if wake {
		changed := make(chan struct{})
		close(*s.changed.Swap(&changed))
	}
}
