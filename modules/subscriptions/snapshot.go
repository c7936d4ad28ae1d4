package subscriptions

import (
	"fmt"
	"slices"
	"time"
)

// Snapshot is the durable part of a Partition: what a restart must not
// forget. The owner is not part of it: after a restart every consumer
// connects again, and the partitions move to them (a new epoch).
type Snapshot struct {
	Epoch    uint64            `json:"epoch"`
	Floor    uint64            `json:"floor"`
	Settled  []uint64          `json:"settled,omitempty"`
	InFlight []SnapshotAttempt `json:"inFlight,omitempty"`
	// Replays are parked events delivered once more (attempt 0: not sent
	// yet), apart from the floor.
	Replays []SnapshotAttempt `json:"replays,omitempty"`
}

// SnapshotAttempt is a delivery in flight as a Snapshot keeps it.
type SnapshotAttempt struct {
	EventID uint64 `json:"id"`
	Attempt int    `json:"attempt"`
}

// Restore returns partition index of a subscription with opts as s left
// it, without an owner: its deliveries in flight are sent again to the
// next owner at once, with the same attempt and a fresh timeout.
func Restore(index int, opts Options, s Snapshot, now time.Time) (*Partition, error) {
	p := &Partition{Index: index, opts: opts, Epoch: s.Epoch, floor: s.Floor, cursor: s.Floor}
	last := s.Floor
	for i, id := range s.Settled {
		if id < s.Floor || (i > 0 && id <= s.Settled[i-1]) {
			return nil, fmt.Errorf("partition %d: settled ids not ascending above the floor %d", index, s.Floor)
		}
		last = max(last, id+1)
	}
	for i, a := range s.InFlight {
		if a.EventID < s.Floor || (i > 0 && a.EventID <= s.InFlight[i-1].EventID) || a.Attempt < 1 {
			return nil, fmt.Errorf("partition %d: deliveries in flight not ascending above the floor %d", index, s.Floor)
		}
		if _, settled := slices.BinarySearch(s.Settled, a.EventID); settled {
			return nil, fmt.Errorf("partition %d: event %d both settled and in flight", index, a.EventID)
		}
		p.inFlight = append(p.inFlight, Delivery{EventID: a.EventID, Attempt: a.Attempt, Due: now.Add(opts.AcknowledgeTimeout), Resend: true})
		last = max(last, a.EventID+1)
	}
	for i, a := range s.Replays {
		if (i > 0 && a.EventID <= s.Replays[i-1].EventID) || a.Attempt < 0 {
			return nil, fmt.Errorf("partition %d: replays not ascending", index)
		}
		if _, inFlight := searchDeliveries(p.inFlight, a.EventID); inFlight {
			return nil, fmt.Errorf("partition %d: event %d both in flight and replayed", index, a.EventID)
		}
		p.replays = append(p.replays, Delivery{EventID: a.EventID, Attempt: max(a.Attempt, 1), Due: now.Add(opts.AcknowledgeTimeout), Resend: true})
	}
	p.settled = slices.Clone(s.Settled)
	p.cursor = last
	return p, nil
}
