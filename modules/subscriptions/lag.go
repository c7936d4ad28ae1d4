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
// the last call, so that a call reads only those, and those a cursor moved
// over elsewhere (a partition another node holds, read again); the first
// call after a start or a reset reads the log from the lowest cursor on,
// a chunk at a time (catchUpLag).
func (m *Manager) Lag(name string) (uint64, error) {
	sub, err := m.lookup(name)
	if err != nil {
		return 0, err
	}
	if err := m.catchUpLag(sub); err != nil {
		return 0, err
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.node != "" {
		if err := m.refreshAll(sub, true); err != nil { // the cursors of other nodes
			return 0, m.missing(sub, err)
		}
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
// for long. The caller then takes the lock and counts the rest, the few
// events written meanwhile (lagLocked). It must not hold sub's lock.
func (m *Manager) catchUpLag(sub *subscription) error {
	head := m.store.View().Count()
	for {
		sub.mu.Lock()
		if sub.deleted {
			sub.mu.Unlock()
			return ErrNotFound
		}
		_, err := m.countLag(sub, lagChunk)
		done := sub.lag.ahead != nil && sub.lag.to >= head
		sub.mu.Unlock()
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
//
// The count stays right whatever moves between two calls: the events at
// or above lag.to are not counted yet, and a cursor that passes one of
// them only moves its partition's from beyond it, so that no later chunk
// counts it.
func (m *Manager) countLag(sub *subscription, limit uint64) (uint64, error) {
	view := m.store.View()
	c := &sub.lag
	if c.ahead != nil {
		if err := c.follow(sub, view); err != nil {
			c.ahead = nil
			return 0, err
		}
	}
	if c.ahead == nil {
		c.ahead, c.from, c.to = make([]int64, len(sub.parts)), make([]uint64, len(sub.parts)), uint64(math.MaxUint64)
		c.moved = make([]bool, len(sub.parts))
		for i, p := range sub.parts {
			c.from[i] = p.Cursor()
			c.to = min(c.to, p.Cursor())
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
func (c *lagCount) follow(sub *subscription, view *store.View) error {
	from, to := uint64(math.MaxUint64), uint64(0)
	for i, p := range sub.parts {
		switch cur := p.Cursor(); {
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
			if id >= c.from[p] && id < sub.parts[p].Cursor() {
				c.ahead[p]--
			}
		})
		if err != nil {
			return err
		}
	}
	for i, p := range sub.parts {
		c.from[i] = max(c.from[i], p.Cursor())
		c.moved[i] = false
	}
	return nil
}

// eachMatching calls fn with the partition and id of every event of view
// in [from, to) that sub matches.
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
