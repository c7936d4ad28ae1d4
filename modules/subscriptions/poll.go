package subscriptions

import (
	"errors"
	"time"

	"github.com/eventstore-service/eventstore/modules/store"
)

// The steps of Poll (consume.go).

// pollable returns the partitions of sub that the consumer name owns, and
// those a poll of it may change: its own, and the others' with room in
// their windows (the poll delivers their new events too). It is small
// enough to be inlined, which keeps the slices on Poll's stack. The caller
// holds sub.mu.
func (sub *subscription) pollable(name string) (owned, parts []int) {
	for i, p := range sub.parts {
		if p.Owner == name {
			owned = append(owned, i)
		}
		if p.Owner == name || (p.Owner != "" && p.Room() > 0) {
			parts = append(parts, i) // what this poll may change
		}
	}
	return owned, parts
}

// takeDue puts into mine, up to its limit, the deliveries of the
// partitions owned (c's) that are due now, their records taken from c's
// read-ahead or read from view in one pass. It returns the changes that
// park the deliveries out of attempts instead, and how many they are. The
// caller holds sub.mu.
func (sub *subscription) takeDue(view *store.View, now time.Time, c *Consumer, owned []int, mine *batch) (parkedChanges []store.Change, parkedCount int, err error) {
	var (
		due    []Delivered // their records from the read-ahead, or read below
		unread []uint64
	)
	for _, i := range owned {
		if len(due) >= mine.limit {
			break
		}
		p := sub.parts[i]
		again, parked := p.Due(now, mine.limit-len(due))
		for _, d := range again {
			rec, ok := c.ahead.take(d.EventID)
			if !ok {
				unread = append(unread, d.EventID)
			}
			due = append(due, Delivered{Token: sub.token(p, d), Record: rec})
		}
		for _, pk := range parked {
			parkedChanges = append(parkedChanges, parkChange(sub.def.Name, p.Index, pk))
		}
		parkedCount += len(parked)
	}
	if err := readDue(view, due, unread); err != nil {
		return nil, parkedCount, err
	}
	for _, d := range due {
		mine.add(d)
	}
	return parkedChanges, parkedCount, nil
}

// reread reads the partitions of sub again after a poll found one changed
// by another node (errFenced). It fails with ErrDeleted when the
// subscription was deleted there. The caller holds sub.mu.
func (m *Manager) reread(sub *subscription) error {
	if err := m.refreshAll(sub); err != nil {
		if errors.Is(err, errPartitionGone) {
			m.gone(sub)
			return ErrDeleted
		}
		return err
	}
	return nil
}

// countOutcomes adds to the outcomes of sub the deliveries of the
// partitions owned that timed out, and parked. The caller holds sub.mu.
func (sub *subscription) countOutcomes(owned []int, parked int) {
	for _, i := range owned {
		sub.outcomes.TimedOut += uint64(sub.parts[i].TakeTimeouts())
	}
	sub.outcomes.Parked += uint64(parked)
}

// dueNow reports whether a delivery of the partitions owned is due now.
// The caller holds sub.mu.
func (sub *subscription) dueNow(owned []int, now time.Time) bool {
	for _, i := range owned {
		if due, ok := sub.parts[i].NextDue(); ok && !due.After(now) {
			return true
		}
	}
	return false
}

// pruneAhead forgets the records of c's read-ahead that are no longer c's
// to send: of a partition it lost, or of a delivery settled or sent since.
// The caller holds sub.mu.
func (sub *subscription) pruneAhead(c *Consumer) {
	c.ahead.prune(func(partition int, id uint64) bool { // what is no longer c's to send
		p := sub.parts[partition]
		i, found := searchDeliveries(p.inFlight, id)
		return p.Owner != c.Name || !found || !p.inFlight[i].Unsent
	})
}
