package subscriptions

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/store"
)

// On a shared backend (PostgreSQL mode) every node keeps every partition
// in memory, but delivers only those it holds: the partitions whose record
// names this node and one of its consumers. The others are mirrors of
// their records, read again when their change count (the record's Seq)
// moved, so that a node can answer reads and settle deliveries of any
// partition.
//
// Every change of a partition's records, by its holder or by any other
// node (a settle, a reset, a replay, a move), puts the partition record
// with Seq + 1 and is fenced: the writer refuses it unless the stored Seq
// is still the one its author read (fenceCheck). So two nodes never both
// change a partition from the same state, a holder learns of every change
// made elsewhere before its next own one, and a node that lost a
// partition (its epoch moved on) can change nothing of it any more.
//
// Which node delivers a partition is decided by leases: cluster.go.

// fence is the change count a partition record must still have for a
// request to be made.
type fence struct {
	partition int
	seq       uint64
}

// errFenced refuses a request that changed a partition another node
// changed since this node read it; nothing of the request is stored.
var errFenced = errors.New("the partition changed on another node")

// fencedError names the partition whose record moved on.
type fencedError struct{ partition int }

func (e *fencedError) Error() string { return fmt.Sprintf("partition %d: %v", e.partition, errFenced) }
func (e *fencedError) Unwrap() error { return errFenced }

// fenceCheck returns the Check of a request that changes the partitions of
// fences of subscription name: each record must have the Seq named,
// composed with the request's own check, unless nil.
func fenceCheck(name string, fences []fence, own func(*store.Group) error) func(*store.Group) error {
	return func(g *store.Group) error {
		for _, f := range fences {
			r, found, err := g.State(spacePartitions, partitionKey(name, f.partition))
			if err != nil {
				return err
			}
			var pr partitionRecord
			if found {
				if err := json.Unmarshal(r.Value, &pr); err != nil {
					return fmt.Errorf("subscription %s, partition %d: %w", name, f.partition, err)
				}
			}
			if !found || pr.Seq != f.seq {
				return &fencedError{f.partition}
			}
		}
		if own != nil {
			return own(g)
		}
		return nil
	}
}

// fenced adds to r the changes of the partition records that the partitions
// parts changed (before are their copies from before), each with Seq + 1,
// and the fence on their Seq, and returns the records as they will be. The
// changes r holds of the partition records (their epoch and floor) are
// replaced by those.
func (sub *subscription) fenced(r *store.Request, parts []int, before []Partition, changed []bool) map[int]partitionRecord {
	var fences []fence
	next := map[int]partitionRecord{}
	for i, p := range parts {
		after := sub.parts[p]
		if !changed[i] && before[i].Owner == after.Owner {
			continue
		}
		rec := sub.recs[p]
		switch {
		case after.Owner != "":
			rec.Node, rec.Consumer = sub.node, after.Owner
		case before[i].Owner != "": // released
			rec.Node, rec.Consumer = "", ""
		}
		rec.Epoch, rec.Floor, rec.Seq = after.Epoch, after.floor, rec.Seq+1
		next[p] = rec
		fences = append(fences, fence{p, sub.recs[p].Seq})
	}
	if len(fences) == 0 {
		return nil
	}
	keys := make(map[string]bool, len(fences))
	for _, f := range fences {
		keys[partitionKey(sub.def.Name, f.partition)] = true
	}
	kept := r.Changes[:0:0]
	for _, c := range r.Changes {
		if c.Space != spacePartitions || !keys[c.Key] {
			kept = append(kept, c)
		}
	}
	for _, f := range fences {
		kept = append(kept, store.Change{Space: spacePartitions, Key: partitionKey(sub.def.Name, f.partition),
			Value: mustJSON(next[f.partition]), Expect: store.AnyVersion})
	}
	r.Changes = kept
	r.Check = fenceCheck(sub.def.Name, fences, r.Check)
	return next
}

// markChanged marks in changed the partitions of parts that extra changes
// records of (a retry settled on a node that does not hold it).
func markChanged(changed []bool, parts []int, extra []store.Change) {
	for _, c := range extra {
		if c.Space != spaceDeliveries {
			continue
		}
		i := strings.IndexByte(c.Key, '/')
		if i < 0 || len(c.Key) < i+5 {
			continue
		}
		p, err := strconv.Atoi(c.Key[i+1 : i+5])
		if err != nil {
			continue
		}
		if j := slices.Index(parts, p); j >= 0 {
			changed[j] = true
		}
	}
}

// refresh reads partition p of sub again if its record moved on since this
// node read it (another node changed it), and takes it as it is stored. A
// partition this node holds stays held if its record still names this
// node and its owner; the timeouts of its deliveries still in flight with
// the same attempt keep running, and retries asked for on other nodes
// take effect. It fails with errPartitionGone when the subscription was
// deleted. The caller holds sub.mu.
func (m *Manager) refresh(sub *subscription, p int) error {
	if rec, err := readPartitionRecord(m.store, sub.def.Name, p); err != nil || rec == sub.recs[p] {
		return err // unchanged: one read
	}
	snap, retries, rec, err := loadPartition(m.store, sub.def.Name, p, len(sub.parts))
	if err != nil {
		return err
	}
	now := m.now()
	fresh, err := Restore(p, sub.def.Options, snap, now)
	if err != nil {
		return fmt.Errorf("subscription %s: %w", sub.def.Name, err)
	}
	old := sub.parts[p]
	if old.Owner != "" && rec.Node == sub.node && rec.Consumer == old.Owner {
		fresh.Owner = old.Owner
	}
	if fresh.Epoch == old.Epoch {
		keepTimers(fresh.inFlight, old.inFlight, retries, now)
		keepTimers(fresh.replays, old.replays, nil, now)
		fresh.cursor = max(fresh.cursor, old.cursor)
	}
	fresh.timedOut = old.timedOut
	if old.Owner != "" && fresh.Owner == "" {
		sub.notify(old.Owner) // it lost the partition
	}
	*old = *fresh
	sub.recs[p] = rec
	sub.lag = lagCount{}
	return nil
}

// keepTimers gives the deliveries of fresh that are in old with the same
// attempt their timers from old, and those retried on another node (event
// id → Unix nanoseconds) their time.
func keepTimers(fresh, old []Delivery, retries map[uint64]int64, now time.Time) {
	for i := range fresh {
		d := &fresh[i]
		if j, found := searchDeliveries(old, d.EventID); found && old[j].Attempt == d.Attempt {
			d.Due, d.Resend, d.Unsent = old[j].Due, old[j].Resend, old[j].Unsent
		}
		if at, ok := retries[d.EventID]; ok {
			d.Due, d.Resend, d.Unsent = now.Add(time.Until(time.Unix(0, at))), false, false
		}
	}
}

// refreshAll refreshes every partition of sub whose record moved on, by
// one read of the records. The caller holds sub.mu.
func (m *Manager) refreshAll(sub *subscription) error {
	recs, err := m.partitionRecords(sub)
	if err != nil {
		return err
	}
	for p, rec := range recs {
		if rec != sub.recs[p] {
			if err := m.refresh(sub, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionRecords reads the records of sub's partitions; errPartitionGone
// when one is missing.
func (m *Manager) partitionRecords(sub *subscription) ([]partitionRecord, error) {
	recs := make([]partitionRecord, len(sub.parts))
	seen := make([]bool, len(sub.parts))
	it := m.store.States(spacePartitions, sub.def.Name+"/")
	for it.Next() {
		r := it.Record()
		var p int
		if _, err := fmt.Sscanf(r.Key[len(sub.def.Name)+1:], "%d", &p); err != nil || p >= len(recs) {
			it.Close()
			return nil, fmt.Errorf("subscription %s: partition record %q", sub.def.Name, r.Key)
		}
		if err := json.Unmarshal(r.Value, &recs[p]); err != nil {
			it.Close()
			return nil, fmt.Errorf("subscription %s: partition record %q: %w", sub.def.Name, r.Key, err)
		}
		seen[p] = true
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if i := slices.Index(seen, false); i >= 0 {
		return nil, fmt.Errorf("subscription %s: partition %d: %w", sub.def.Name, i, errPartitionGone)
	}
	return recs, nil
}
