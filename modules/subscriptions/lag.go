package subscriptions

import (
	"math"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Lag returns the number of events of the subscription name above its
// partitions' positions that are neither in flight nor settled: the
// matching events at or after each partition's cursor. The count is kept
// as the cursors move (scan) and extended over the events written since
// the last call, so that a call reads only those; the first call after a
// start or a reset reads the log from the lowest cursor on.
func (m *Manager) Lag(name string) (uint64, error) {
	sub, err := m.lookup(name)
	if err != nil {
		return 0, err
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.node != "" {
		if err := m.refreshAll(sub, true); err != nil { // the cursors of other nodes
			return 0, m.missing(sub, err)
		}
	}
	view := m.store.View()
	c := &sub.lag
	if c.ahead == nil {
		c.ahead, c.to = make([]int64, len(sub.parts)), uint64(math.MaxUint64)
		for _, p := range sub.parts {
			c.to = min(c.to, p.Cursor())
		}
	}
	if head := view.Count(); c.to < head {
		var sc jsonscan.Scanner
		it := view.Scan(store.Scan{Subject: sub.def.Subject, Recursive: sub.def.Options.Recursive, From: c.to, To: head - 1})
		for it.Next() {
			subject, eventType, err := it.Record().SubjectAndType(&sc)
			if err != nil {
				it.Close()
				c.ahead = nil
				return 0, err
			}
			if !sub.def.Matches(subject, eventType) {
				continue
			}
			if p := PartitionOf(subject, len(sub.parts)); it.Record().ID >= sub.parts[p].Cursor() {
				c.ahead[p]++
			}
		}
		if err := it.Close(); err != nil {
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
// matching events from its cursor up to to. nil ahead: to be counted
// afresh.
type lagCount struct {
	to    uint64
	ahead []int64
}

// passed notes that partition p's cursor passed the matching event id.
func (c *lagCount) passed(p int, id uint64) {
	if c.ahead != nil && id < c.to {
		c.ahead[p]--
	}
}
