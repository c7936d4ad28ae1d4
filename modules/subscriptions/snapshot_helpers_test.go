package subscriptions

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The tests take a partition's durable part and bring it back, as a
// restart does from the stored records.

// Snapshot returns the durable part of p.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{Epoch: p.Epoch, Floor: p.floor, Settled: slices.Clone(p.settled)}
	for _, d := range p.inFlight {
		s.InFlight = append(s.InFlight, SnapshotAttempt{EventID: d.EventID, Attempt: d.Attempt})
	}
	for _, d := range p.replays {
		s.Replays = append(s.Replays, SnapshotAttempt{EventID: d.EventID, Attempt: d.Attempt})
	}
	return s
}

// MarshalSnapshot returns a stored form of s.
func MarshalSnapshot(s Snapshot) ([]byte, error) { return json.Marshal(s) }

// UnmarshalSnapshot returns the Snapshot of a stored form.
func UnmarshalSnapshot(raw []byte) (Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return Snapshot{}, fmt.Errorf("partition state: %w", err)
	}
	return s, nil
}
