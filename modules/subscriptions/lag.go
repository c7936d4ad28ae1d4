package subscriptions

import (
	"math"
	"slices"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Lag returns the number of events of the subscription name above its
// partitions' positions that are neither in flight nor settled: the
// matching events at or after each partition's cursor. The count is kept
// as the cursors move (scan) and extended over the events written since
// it was last, so that a call reads only those, and those a cursor moved
// over elsewhere (a partition another node holds, read again); the first
// call after a start or a reset reads the log from the lowest cursor on,
// a chunk at a time (catchUpLag). On a backend of one node it takes the
// count from the subscription's view, without waiting for its lock
// (lagOf).
func (m *Manager) Lag(name string) (uint64, error) {
	sub, err := m.lookup(name)
	if err != nil {
		return 0, err
	}
	if sub.node == "" {
		_, lag, err := m.lagOf(sub)
		return lag, err
	}
	if err := m.catchUpLag(sub, nil); err != nil {
		return 0, err
	}
	sub.mu.Lock()
	defer sub.unlock()
	if err := m.refreshAll(sub, true); err != nil { // the cursors of other nodes
		return 0, m.missing(sub, err)
	}
	return m.lagLocked(sub)
}

// lagChunk bounds the events a count of the lag reads under the
// subscription's lock at once (catchUpLag).
const lagChunk = 16_384

// catchUpLag counts the lag of sub up to the log's head as it is now, a
// chunk of lagChunk events at a time under sub's lock, letting go of it in
// between: a long count (the first after a start or a reset, at a backlog
// of millions of events) never holds up the consumers' polls and settles
// for long. Its caller then counts the rest, the few events written
// meanwhile (lagOf, lagLocked). It must not hold sub's lock. It stops
// early, with nil, when quit is closed.
func (m *Manager) catchUpLag(sub *subscription, quit <-chan struct{}) error {
	head := m.store.View().Count()
	for {
		select {
		case <-quit:
			return nil
		default:
		}
		sub.mu.Lock()
		if sub.deleted {
			sub.unlock()
			return ErrNotFound
		}
		_, err := m.countLag(sub, lagChunk)
		done := sub.lag.ahead != nil && sub.lag.to >= head
		sub.unlock()
		if err != nil || done {
			return err
		}
	}
}

// lagLocked is Lag for a caller that holds sub's lock and has read the
// cursors of other nodes.
func (m *Manager) lagLocked(sub *subscription) (uint64, error) {
	return m.countLag(sub, math.MaxUint64)
}

// countLag brings sub's lag count in line with the cursors and extends it
// over at most limit events written since it was last extended, and
// returns the lag as counted so far. The caller holds sub's lock.
func (m *Manager) countLag(sub *subscription, limit uint64) (uint64, error) {
	cursors := make([]uint64, len(sub.parts))
	for i, p := range sub.parts {
		cursors[i] = p.Cursor()
	}
	return sub.lag.count(sub, m.store.View(), cursors, limit)
}

// count brings c in line with the partitions' cursors and extends it over
// at most limit events of view written since it was last extended, and
// returns the lag as counted so far. It reads of sub only what never
// changes (its definition and number of partitions): a read counts on a
// copy of the count, without sub's lock (lagOf).
//
// The count stays right whatever moves between two calls: the events at
// or above c.to are not counted yet, and a cursor that passes one of
// them only moves its partition's from beyond it, so that no later chunk
// counts it.
func (c *lagCount) count(sub *subscription, view *store.View, cursors []uint64, limit uint64) (uint64, error) {
	if c.ahead != nil {
		if err := c.follow(sub, view, cursors); err != nil {
			c.ahead = nil
			return 0, err
		}
	}
	if c.ahead == nil {
		c.ahead, c.from, c.to = make([]int64, len(cursors)), slices.Clone(cursors), uint64(math.MaxUint64)
		c.moved = make([]bool, len(cursors))
		for _, cur := range cursors {
			c.to = min(c.to, cur)
		}
	}
	if head := view.Count(); c.to < head {
		if head-c.to > limit {
			head = c.to + limit
		}
		err := sub.eachMatching(view, c.to, head, func(p int, id uint64) {
			if id >= c.from[p] {
				c.ahead[p]++
			}
		})
		if err != nil {
			c.ahead = nil
			return 0, err
		}
		c.to = head
	}
	var lag int64
	for _, n := range c.ahead {
		lag += n
	}
	return uint64(max(lag, 0)), nil
}

// lagCount is what Lag keeps of a subscription: for each partition, the
// matching events from from (the partition's cursor when last counted) up
// to to. nil ahead: to be counted afresh.
type lagCount struct {
	to    uint64
	ahead []int64
	from  []uint64
	// moved marks the partitions whose cursor moved by other means than
	// passing events (read again as another node stored it): follow counts
	// them again from from to the cursor, and passed leaves them alone
	// until then, lest it step over what follow has to take off.
	moved []bool
}

// clone returns a copy of c that shares nothing with it.
func (c *lagCount) clone() lagCount {
	return lagCount{to: c.to, ahead: slices.Clone(c.ahead), from: slices.Clone(c.from), moved: slices.Clone(c.moved)}
}

// passed notes that partition p's cursor passed the matching event id.
func (c *lagCount) passed(p int, id uint64) {
	if c.ahead != nil && !c.moved[p] {
		if id < c.to && id >= c.from[p] {
			c.ahead[p]--
		}
		c.from[p] = max(c.from[p], id+1)
	}
}

// skipped notes that partition p's cursor moved to to over events that it
// passed (passed) or that are not its own.
func (c *lagCount) skipped(p int, to uint64) {
	if c.ahead != nil && !c.moved[p] {
		c.from[p] = max(c.from[p], to)
	}
}

// reread notes that partition p was read again as stored: its cursor may
// have moved without passing events here.
func (c *lagCount) reread(p int) {
	if c.ahead != nil {
		c.moved[p] = true
	}
}

// follow brings the counts in line with cursors that moved without
// passing events (a partition read again as another node stored it, or
// skipped ahead): the matching events between a count's start and its
// partition's cursor are taken off. A cursor that went back (a reset)
// has everything counted afresh (ahead nil).
func (c *lagCount) follow(sub *subscription, view *store.View, cursors []uint64) error {
	from, to := uint64(math.MaxUint64), uint64(0)
	for i, cur := range cursors {
		switch {
		case cur < c.from[i]:
			c.ahead = nil
			return nil
		case cur > c.from[i] && c.from[i] < c.to:
			from, to = min(from, c.from[i]), max(to, min(cur, c.to))
		case cur > c.from[i]:
			c.from[i] = cur // beyond what was counted
		}
	}
	if from < to {
		err := sub.eachMatching(view, from, to, func(p int, id uint64) {
			if id >= c.from[p] && id < cursors[p] {
				c.ahead[p]--
			}
		})
		if err != nil {
			return err
		}
	}
	for i, cur := range cursors {
		c.from[i] = max(c.from[i], cur)
		c.moved[i] = false
	}
	return nil
}

// eachMatching calls fn with the partition and id of every event of view
// in [from, to) that sub matches. It reads only what of sub never changes.
func (sub *subscription) eachMatching(view *store.View, from, to uint64, fn func(p int, id uint64)) error {
	var sc jsonscan.Scanner
	it := view.Scan(store.Scan{Subject: sub.def.Subject, Recursive: sub.def.Options.Recursive, From: from, To: to - 1})
	for it.Next() {
		subject, eventType, err := it.Record().SubjectAndType(&sc)
		if err != nil {
			it.Close()
			return err
		}
		if sub.def.Matches(subject, eventType) {
			fn(PartitionOf(subject, len(sub.parts)), it.Record().ID)
		}
	}
	return it.Close()
}
