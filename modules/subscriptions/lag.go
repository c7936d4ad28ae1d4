package subscriptions

import (
	"errors"
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
// call after a start or a reset counts from the lowest cursor on, by the
// subject's index entries outside the lock (catchUpLag). On a backend of
// one node it takes the count from the subscription's view, without
// waiting for its lock (lagOf).
func (m *Manager) Lag(name string) (uint64, error) {
	return lookingAgain(m, func() (uint64, error) { return m.lag(name) })
}

// lag is Lag once.
func (m *Manager) lag(name string) (uint64, error) {
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
	reads, err := m.readForInfo(sub) // the cursors of other nodes, outside the lock
	sub.mu.Lock()
	defer sub.unlock()
	if err == nil {
		err = m.takeRead(sub, reads)
	}
	if err != nil {
		return 0, m.missing(sub, err)
	}
	return m.lagLocked(sub)
}

// lagChunk bounds the events a count of the lag reads under the
// subscription's lock: the few written since it was last counted. A
// longer count (the first after a start or a reset, at a backlog of
// millions of events) runs outside the lock (lagPass).
const lagChunk = 16_384

// errStopped ends a count of the lag when its manager stops.
var errStopped = errors.New("the count stopped")

// catchUpLag counts the lag of sub up to the log's head as it is now:
// under sub's lock when it is at most lagChunk events behind, else in a
// pass outside the lock (lagPass), so that a long count never holds up the
// consumers' polls and settles. One pass runs at a time: a second caller
// waits for it. Its caller then counts the rest, the few events written
// meanwhile (lagOf, lagLocked). It must not hold sub's lock. It stops
// early, with nil, when quit is closed.
func (m *Manager) catchUpLag(sub *subscription, quit <-chan struct{}) error {
	for {
		sub.mu.Lock()
		if sub.deleted {
			sub.unlock()
			return ErrNotFound
		}
		view := m.store.View()
		c := &sub.lag
		if _, err := m.countLag(sub, 0); err != nil { // in line with the cursors
			sub.unlock()
			return err
		}
		if view.Count()-min(view.Count(), c.to) <= lagChunk {
			_, err := m.countLag(sub, lagChunk)
			sub.unlock()
			return err
		}
		if pass := c.pass; pass != nil {
			sub.unlock()
			select {
			case <-pass.done:
				continue
			case <-quit:
				return nil
			}
		}
		pass := c.begin(view.Count())
		sub.unlock()
		counts, err := sub.countPass(view, pass, quit)
		sub.mu.Lock()
		c.end(pass, counts, sub.cursors(), err == nil)
		sub.unlock()
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// cursors returns the cursors of sub's partitions. The caller holds
// sub.mu.
func (sub *subscription) cursors() []uint64 {
	cursors := make([]uint64, len(sub.parts))
	for i, p := range sub.parts {
		cursors[i] = p.Cursor()
	}
	return cursors
}

// countPass counts, for each partition, the matching events of view in
// the pass's range at or after its cursor when the pass began. Over most
// of the log it reads the subject's index entries by subject and type
// (store.View.Groups), not the events; a short range at the end of a long
// log costs less read event by event than the index entries of the
// subject's whole history. It stops with errStopped when quit is closed.
func (sub *subscription) countPass(view *store.View, pass *lagPass, quit <-chan struct{}) ([]int64, error) {
	counts := make([]int64, len(pass.cursors))
	if pass.from > pass.to/2 {
		return counts, sub.eachMatching(view, pass.from, pass.to, func(p int, id uint64) {
			if id >= pass.cursors[p] {
				counts[p]++
			}
		})
	}
	sc := store.Scan{Subject: sub.def.Subject, Recursive: sub.def.Options.Recursive, From: pass.from, To: pass.to - 1}
	return counts, view.Groups(sc, func(subject, eventType string, ids []uint64) error {
		select {
		case <-quit:
			return errStopped
		default:
		}
		if !sub.def.Matches(subject, eventType) {
			return nil
		}
		p := PartitionOf(subject, len(counts))
		for _, id := range ids {
			if id >= pass.cursors[p] {
				counts[p]++
			}
		}
		return nil
	})
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
	return sub.lag.count(sub, m.store.View(), sub.cursors(), limit)
}

// count brings c in line with the partitions' cursors and extends it over
// at most limit events of view written since it was last extended, and
// returns the lag as counted so far. It reads of sub only what never
// changes (its definition and number of partitions): a read counts on a
// copy of the count, without sub's lock (lagOf).
//
// The count stays right whatever moves between two calls: the events at
// or above c.to are not counted yet, and a cursor that passes one of
// them only moves its partition's from beyond it, so that no later count
// counts it (a pass outside the lock notes it instead: lagPass).
func (c *lagCount) count(sub *subscription, view *store.View, cursors []uint64, limit uint64) (uint64, error) {
	if c.ahead != nil {
		if err := c.follow(sub, view, cursors); err != nil {
			*c = lagCount{}
			return 0, err
		}
	}
	if c.ahead == nil {
		*c = lagCount{ahead: make([]int64, len(cursors)), from: slices.Clone(cursors), to: math.MaxUint64, moved: make([]bool, len(cursors))}
		for _, cur := range cursors {
			c.to = min(c.to, cur)
		}
	}
	if head := view.Count(); c.to < head && limit > 0 {
		if head-c.to > limit {
			head = c.to + limit
		}
		err := sub.eachMatching(view, c.to, head, func(p int, id uint64) {
			if id >= c.from[p] {
				c.ahead[p]++
			}
		})
		if err != nil {
			*c = lagCount{}
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
	pass  *lagPass // counting the events from to on, outside the lock
}

// lagPass is a count of the events from from to to (exclusive) that runs
// outside the subscription's lock (catchUpLag): what the cursors pass
// meanwhile is noted here, and taken off the pass's counts when they are
// added (end).
type lagPass struct {
	from, to uint64
	cursors  []uint64 // the partitions' cursors when the pass began
	passed   []int64  // events of the range each partition passed since
	void     bool     // a cursor moved into the range by other means
	done     chan struct{}
}

// clone returns a copy of c that shares nothing with it, and no pass.
func (c *lagCount) clone() lagCount {
	return lagCount{to: c.to, ahead: slices.Clone(c.ahead), from: slices.Clone(c.from), moved: slices.Clone(c.moved)}
}

// begin starts a pass over the events from c.to up to head.
func (c *lagCount) begin(head uint64) *lagPass {
	c.pass = &lagPass{from: c.to, to: head, cursors: slices.Clone(c.from), passed: make([]int64, len(c.from)), done: make(chan struct{})}
	return c.pass
}

// end adds the counts of pass, made with the cursors now, when it is still
// c's and nothing it did not note moved over its range; else the pass is
// dropped, and the next count starts another. It reports whether it
// added them.
func (c *lagCount) end(pass *lagPass, counts []int64, cursors []uint64, ok bool) (added bool) {
	defer close(pass.done)
	if c.pass != pass {
		return false // counted afresh meanwhile
	}
	c.pass = nil
	if !ok || pass.void || c.ahead == nil || c.to != pass.from {
		return false
	}
	for p, cur := range cursors {
		if cur > c.from[p] && cur > pass.from {
			return false // moved without passing
		}
	}
	for p := range c.ahead {
		c.ahead[p] += counts[p] - pass.passed[p]
	}
	c.to = pass.to
	return true
}

// passed notes that partition p's cursor passed the matching event id.
func (c *lagCount) passed(p int, id uint64) {
	if c.ahead != nil && !c.moved[p] {
		switch pass := c.pass; {
		case id < c.to && id >= c.from[p]:
			c.ahead[p]--
		case pass != nil && id >= pass.from && id < pass.to && id >= c.from[p]:
			pass.passed[p]++
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
	if c.pass != nil {
		c.pass.void = true
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
		if pass := c.pass; pass != nil && cur > c.from[i] && cur > pass.from {
			pass.void = true // moved over the pass's range
		}
		switch {
		case cur < c.from[i]:
			*c = lagCount{}
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
