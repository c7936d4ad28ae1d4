package subscriptions

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eventstore-service/eventstore/modules/store"
)

// On a shared backend (PostgreSQL mode) every node keeps every partition
// in memory, but delivers only those it holds: the partitions whose record
// names this node and one of its consumers. The others are mirrors, read
// again before they are used.
//
// A partition's record fences the changes of its records (fenceCheck): a
// request that changes a partition requires the record's change count
// (Seq) and the length of its inbox to be still those its author read
// (the holder's deliveries of new events only the change count: no settle
// can name them yet).
//
//   - The node that holds the partition (or, for one that nobody holds, any
//     node) changes its records as on one node. Deliveries of new events
//     only add records and leave the partition record as it is; every
//     other change (a settle, a delivery sent again, a move, a reset, a
//     replay) puts the record with Seq + 1 and an empty inbox.
//   - A settle sent to another node than the holder's changes none of the
//     partition's records: it appends an entry per delivery it settles to
//     the record's inbox, Seq unchanged, after reading the partition as it
//     is stored. The holder takes the inbox in with its next change (every
//     change applies the entries first), and is woken for it when the
//     store follows the other node's commit (stateChanged).
//
// So a settle elsewhere and the holder's deliveries of new events never
// refuse each other; a settle elsewhere is refused (and tried again) only
// when the holder settled, sent again or moved deliveries in between (a
// token names its attempt: one sent again makes it stale); two nodes
// never change a partition from the same state; and a node that lost a
// partition (its epoch moved on) can change nothing of it any more: its
// tokens are stale.
//
// Which node delivers a partition is decided by leases: cluster.go.

// fence is the state a partition record must still have for a request to
// be made: its change count and the length of its inbox (-1: any).
type fence struct {
	partition int
	seq       uint64
	inbox     int
}

// errFenced refuses a request that changed a partition another node
// changed since this node read it; nothing of the request is stored.
var errFenced = errors.New("the partition changed on another node")

// fencedError names the partition whose record moved on.
type fencedError struct{ partition int }

func (e *fencedError) Error() string { return fmt.Sprintf("partition %d: %v", e.partition, errFenced) }
func (e *fencedError) Unwrap() error { return errFenced }

// fenceCheck returns the Check of a request that changes the partitions of
// fences of subscription name: each record must have the Seq and inbox
// length named, composed with the request's own check, unless nil.
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
			if !found || pr.Seq != f.seq || (f.inbox >= 0 && len(pr.Inbox) != f.inbox) {
				return &fencedError{f.partition}
			}
		}
		if own != nil {
			return own(g)
		}
		return nil
	}
}

// remote reports whether partition p is held by another node, as this
// node last read its record.
func (sub *subscription) remote(p int) bool {
	return sub.node != "" && sub.recs[p].Node != "" && sub.recs[p].Node != sub.node
}

// takeInbox applies the entries of the inbox of partition p, as this node
// last read it, to the partition (applyInbox). The caller holds sub.mu.
func (sub *subscription) takeInbox(p int, now time.Time) {
	applyInbox(sub.parts[p], sub.def.Name, sub.recs[p].Inbox, now)
}

// applyInbox applies the settles of entries to part, of subscription
// name. An entry whose delivery is no longer in flight changes nothing.
func applyInbox(part *Partition, name string, entries []inboxEntry, now time.Time) {
	for _, e := range entries {
		t := Token{Subscription: name, Partition: part.Index, Epoch: e.Epoch, EventID: e.EventID, Attempt: e.Attempt}
		switch e.Action {
		case Acknowledge:
			part.Acknowledge(t)
		case Retry, Extend:
			part.Retry(t, time.Unix(0, e.RetryAt).Sub(now), now)
		case Park:
			part.Park(t, "", now) // its parked record was put with the entry
		}
	}
}

// fenced adds to r the fences of the partitions parts (before are their
// copies from before fn, changed whether their records changed), and the
// changes of their records: a partition whose settles go to its holder's
// inbox (inbox[i]) gets the entries queued for it appended; one this node
// holds that only delivered new events is fenced on its Seq alone and left
// as it is; any other change puts it with Seq + 1 and an empty inbox. It
// returns the records as they will be. The changes r holds of the
// partition records (their epoch and floor) are replaced by those.
func (sub *subscription) fenced(r *store.Request, parts []int, before []Partition, changed, inbox []bool) map[int]partitionRecord {
	var fences []fence
	next := map[int]partitionRecord{}
	put := func(i, p int, rec partitionRecord) { // with Seq + 1 and an empty inbox
		after := sub.parts[p]
		switch {
		case after.Owner != "":
			rec.Node, rec.Consumer = sub.node, after.Owner
		case before[i].Owner != "": // released
			rec.Node, rec.Consumer = "", ""
		}
		rec.Epoch, rec.Floor, rec.Seq, rec.Inbox = after.Epoch, after.floor, rec.Seq+1, nil
		next[p] = rec
	}
	for i, p := range parts {
		rec := sub.recs[p]
		after := sub.parts[p]
		switch {
		case inbox[i]:
			if len(sub.queued[p]) == 0 {
				continue
			}
			rec.Inbox = append(slices.Clip(rec.Inbox), sub.queued[p]...)
			next[p] = rec
		case !changed[i] && before[i].Owner == after.Owner && len(rec.Inbox) == 0:
			continue
		case before[i].Owner != "" && before[i].Owner == after.Owner && len(rec.Inbox) == 0 && grown(&before[i], after):
			// New events only: no settle elsewhere can name them.
			fences = append(fences, fence{p, rec.Seq, -1})
			continue
		default:
			put(i, p, rec)
		}
		fences = append(fences, fence{p, sub.recs[p].Seq, len(sub.recs[p].Inbox)})
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
	for p, rec := range next {
		kept = append(kept, store.Change{Space: spacePartitions, Key: partitionKey(sub.def.Name, p),
			Value: mustJSON(rec), Expect: store.AnyVersion})
	}
	r.Changes = kept
	r.Check = fenceCheck(sub.def.Name, fences, r.Check)
	return next
}

// grown reports whether after differs from before only by deliveries
// added, nothing a settle on another node must learn of before it decides:
// no settle, move or reset, and no delivery sent again (its attempt rose:
// a settle decided on the attempt before must be refused, not stored into
// the inbox, where the holder would drop it as stale after answering it
// as done).
func grown(before, after *Partition) bool {
	if before.Epoch != after.Epoch || before.floor != after.floor || !slices.Equal(before.settled, after.settled) {
		return false
	}
	for _, lists := range [][2][]Delivery{{before.inFlight, after.inFlight}, {before.replays, after.replays}} {
		for _, d := range lists[0] {
			j, found := searchDeliveries(lists[1], d.EventID)
			if !found || lists[1][j].Attempt != d.Attempt {
				return false
			}
		}
	}
	return true
}

// refresh reads partition p of sub again if its record moved on since this
// node read it, or, with force, if another node holds it (whose deliveries
// of new events leave the record as it is), and takes it as it is stored;
// otherwise it only takes the record's inbox. A partition this node holds
// stays held if its record still names this node and its owner; the
// timeouts of its deliveries still in flight with the same attempt keep
// running. It fails with errPartitionGone when the subscription was
// deleted. The caller holds sub.mu.
func (m *Manager) refresh(sub *subscription, p int, force bool) error {
	rec, err := readPartitionRecord(m.store, sub.def.Name, p)
	if err != nil {
		return err
	}
	return m.refreshFrom(sub, p, rec, force)
}

// refreshFrom is refresh with the partition record read: rec. Without
// force, a partition another node holds is not read: its record is taken,
// and its copy read when it is used (with force), or when its record
// names no other node any more.
func (m *Manager) refreshFrom(sub *subscription, p int, rec partitionRecord, force bool) error {
	elsewhere := rec.Node != "" && rec.Node != sub.node
	switch {
	case rec.same(sub.recs[p]) && !(force && elsewhere):
		sub.recs[p].Inbox = rec.Inbox
		return nil
	case elsewhere && !force && sub.parts[p].Owner == "":
		sub.recs[p] = rec
		return nil
	}
	sub.reads++
	read := sub.reads
	snap, rec, err := loadPartition(m.store, sub.def.Name, p, len(sub.parts))
	if err != nil {
		return err
	}
	return m.takePartition(sub, p, snap, rec, read)
}

// takePartition makes sub's partition p the one stored as snap, with its
// record rec, as whole read number read read them. The caller holds sub.mu.
func (m *Manager) takePartition(sub *subscription, p int, snap Snapshot, rec partitionRecord, read uint64) error {
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
		keepTimers(fresh.inFlight, old.inFlight)
		keepTimers(fresh.replays, old.replays)
		fresh.cursor = max(fresh.cursor, old.cursor)
	}
	fresh.timedOut = old.timedOut
	switch {
	case old.Owner == "" || fresh.Owner != "":
	case rec.Node != "" && rec.Node != sub.node && rec.Consumer == old.Owner:
		sub.replaced(old.Owner) // its name connected on the node that holds the partition now
	default:
		sub.notify(old.Owner) // it lost the partition
	}
	*old = *fresh
	sub.recs[p] = rec
	sub.copied[p] = read
	sub.lag.reread(p) // Lag follows the cursor
	return nil
}

// keepTimers gives the deliveries of fresh that are in old with the same
// attempt their timers from old.
func keepTimers(fresh, old []Delivery) {
	for i := range fresh {
		d := &fresh[i]
		if j, found := searchDeliveries(old, d.EventID); found && old[j].Attempt == d.Attempt {
			d.Due, d.Resend, d.Unsent = old[j].Due, old[j].Resend, old[j].Unsent
		}
	}
}

// refreshAll refreshes every partition of sub, as refresh without force
// does, by one read of the records. The caller holds sub.mu.
func (m *Manager) refreshAll(sub *subscription) error {
	recs, err := m.partitionRecords(sub)
	if err != nil {
		return err
	}
	for p, rec := range recs {
		if err := m.refreshFrom(sub, p, rec, false); err != nil {
			return err
		}
	}
	return nil
}

// partitionRead is a partition as readForInfo read it outside sub's lock:
// its record, and, if it was read whole, its copy, by the read numbered
// read.
type partitionRead struct {
	rec  partitionRecord
	snap *Snapshot
	read uint64
}

// readForInfo reads, without sub's lock, what a refresh with force of
// every partition reads under it: the records of sub's partitions, and
// whole the partitions other nodes hold. takeRead then takes them in, so that a read of the
// subscription (read-subscription, the lag of a scrape) holds the lock
// for no read of the store while nothing moves meanwhile. The caller does
// not hold sub.mu.
func (m *Manager) readForInfo(sub *subscription) ([]partitionRead, error) {
	recs, err := m.partitionRecords(sub)
	if err != nil {
		return nil, err
	}
	out := make([]partitionRead, len(recs))
	for p, rec := range recs {
		out[p].rec = rec
		if rec.Node == "" || rec.Node == sub.node {
			continue
		}
		sub.mu.Lock()
		sub.reads++
		out[p].read = sub.reads
		sub.unlock()
		snap, full, err := loadPartition(m.store, sub.def.Name, p, len(recs))
		if err != nil {
			return nil, err
		}
		out[p].snap, out[p].rec = &snap, full
	}
	return out, nil
}

// takeRead takes in what readForInfo read, as a refresh with force of
// every partition would have read it. A partition another node held, read whole, replaces the
// copy unless a whole read that began later gave the copy. A partition
// whose record moved on since it was read (this node committed, took it,
// or took in a later record), and one this node holds, are refreshed
// with force under the lock as ever, which reads the store only when the
// record moved meanwhile. No inbox is taken in shorter than the one this
// node knows. The caller holds sub.mu.
func (m *Manager) takeRead(sub *subscription, reads []partitionRead) error {
	for p, r := range reads {
		cur := sub.recs[p]
		var err error
		switch {
		case r.snap == nil && cur.same(r.rec):
			if len(r.rec.Inbox) > len(cur.Inbox) {
				sub.recs[p].Inbox = r.rec.Inbox
			}
		case r.snap == nil || sub.parts[p].Owner != "" || cur.Seq > r.rec.Seq || cur.Seq == r.rec.Seq && !cur.same(r.rec):
			err = m.refresh(sub, p, true)
		case sub.copied[p] > r.read: // a later read gave the copy
		default:
			if cur.Seq == r.rec.Seq && len(cur.Inbox) > len(r.rec.Inbox) {
				r.rec.Inbox = cur.Inbox
			}
			err = m.takePartition(sub, p, *r.snap, r.rec, r.read)
		}
		if err != nil {
			return err
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

// checkStored is the Check of a commit of sub on a shared backend: it
// fails with errPartitionGone when the stored definition of sub's name is
// gone or is of another incarnation (deleted, and maybe created again, on
// another node), so that nothing is written into the records of another
// incarnation.
func (sub *subscription) checkStored(g *store.Group) error {
	r, found, err := g.State(spaceDefinitions, sub.def.Name)
	if err != nil {
		return err
	}
	if found {
		var dr definitionRecord
		if err := json.Unmarshal(r.Value, &dr); err != nil {
			return fmt.Errorf("subscription %s: %w", sub.def.Name, err)
		}
		if dr.CreatedAt.Equal(sub.createdAt) {
			return nil
		}
	}
	return fmt.Errorf("subscription %s: %w", sub.def.Name, errPartitionGone)
}
