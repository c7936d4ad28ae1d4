package subscriptions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/store"
)

// The subscriptions keep their state as the store's feature state, in
// these spaces, keyed by the subscription's name (which holds no "/"):
//
//	subscriptions.layout      version                     the layout below (absent: 1)
//	subscriptions             <name>                      the definition
//	subscriptions.partitions  <name>/<partition>          its epoch and floor; on a shared backend
//	                                                      also its holder, change count and inbox
//	subscriptions.deliveries  <name>/<partition>/<id>     an event above the floor: in flight
//	                                                      (its attempt) or settled
//	subscriptions.replays     <name>/<partition>/<id>     a parked event delivered once more
//	                                                      (its attempt)
//	subscriptions.parked      <name>/<id>                 a parked event
//	subscriptions.consumers   <name>/<consumer>           a connected consumer and its node (shared backend)
//	subscriptions.nodes       <node>                      a node's lease (shared backend)
//
// Partitions and ids are zero-padded decimals, so that key order is
// numeric order. Every record is small: an acknowledgement changes one
// delivery record, and the partition's when its floor moves (then the
// settled records below the floor go).
const (
	spaceLayout      = "subscriptions.layout"
	spaceDefinitions = "subscriptions"
	spacePartitions  = "subscriptions.partitions"
	spaceDeliveries  = "subscriptions.deliveries"
	spaceReplays     = "subscriptions.replays"
	spaceParked      = "subscriptions.parked"
	spaceConsumers   = "subscriptions.consumers"
	spaceNodes       = "subscriptions.nodes"
)

// Layout is the version of the layout above that this package reads and
// writes. A store whose layout record names a newer one is refused: its
// state would be misread. A change of the layout raises it, and Load
// migrates older layouts.
const Layout = 1

// ErrNewerLayout refuses subscription state of a newer layout.
var ErrNewerLayout = errors.New("subscription state of a newer layout")

// layoutChange records Layout.
func layoutChange() store.Change {
	return store.Change{Space: spaceLayout, Key: "version", Value: []byte(strconv.Itoa(Layout)), Expect: store.AnyVersion}
}

// checkLayout reads the layout record of s: absent (a store without
// subscriptions, or of the first release of them) or at most Layout.
func checkLayout(s *store.Store) (stored bool, err error) {
	r, found, err := s.State(spaceLayout, "version")
	if err != nil || !found {
		return false, err
	}
	v, err := strconv.Atoi(string(r.Value))
	switch {
	case err != nil:
		return true, fmt.Errorf("subscription layout record %q: %w", r.Value, err)
	case v > Layout:
		return true, fmt.Errorf("%w: layout %d, newer than layout %d of this binary: run a release that supports it", ErrNewerLayout, v, Layout)
	}
	return true, nil
}

func partitionKey(name string, p int) string {
	return string(appendPadded(append([]byte(name), '/'), uint64(p), 4))
}

func deliveryKey(name string, p int, id uint64) string {
	b := make([]byte, 0, len(name)+26)
	b = appendPadded(append(append(b, name...), '/'), uint64(p), 4)
	return string(appendPadded(append(b, '/'), id, 20))
}

func parkedKey(name string, id uint64) string {
	return string(appendPadded(append([]byte(name), '/'), id, 20))
}

// appendPadded appends n in decimal to dst, with leading zeros up to width
// digits (fmt's %0*d, which the keys were first made with).
func appendPadded(dst []byte, n uint64, width int) []byte {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], n, 10)
	for range width - len(d) {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// definitionRecord is the stored form of a definition.
type definitionRecord struct {
	Subject            string    `json:"subject"`
	Recursive          bool      `json:"recursive,omitempty"`
	EventTypes         []string  `json:"eventTypes,omitempty"`
	Start              StartKind `json:"start"`
	StartEventID       uint64    `json:"startEventId,omitempty"`
	Partitions         int       `json:"partitions"`
	MaxInFlight        int       `json:"maxInFlight"`
	AcknowledgeTimeout int64     `json:"acknowledgeTimeoutNs"`
	MaxDeliveries      int       `json:"maxDeliveries"`
	CreatedAt          time.Time `json:"createdAt"`
}

func encodeDefinition(d Definition, created time.Time) []byte {
	o := d.Options
	raw, _ := json.Marshal(definitionRecord{Subject: d.Subject, Recursive: o.Recursive, EventTypes: o.EventTypes,
		Start: o.Start.Kind, StartEventID: o.Start.EventID, Partitions: o.Partitions, MaxInFlight: o.MaxInFlight,
		AcknowledgeTimeout: int64(o.AcknowledgeTimeout), MaxDeliveries: o.MaxDeliveries, CreatedAt: created})
	return raw
}

func decodeDefinition(name string, raw []byte) (Definition, time.Time, error) {
	var r definitionRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return Definition{}, time.Time{}, fmt.Errorf("subscription %s: %w", name, err)
	}
	d := Definition{Name: name, Subject: r.Subject, Options: Options{Recursive: r.Recursive, EventTypes: r.EventTypes,
		Start: Start{Kind: r.Start, EventID: r.StartEventID}, Partitions: r.Partitions, MaxInFlight: r.MaxInFlight,
		AcknowledgeTimeout: time.Duration(r.AcknowledgeTimeout), MaxDeliveries: r.MaxDeliveries}}
	if err := d.Validate(); err != nil {
		return Definition{}, time.Time{}, fmt.Errorf("subscription %s: %w", name, err)
	}
	return d, r.CreatedAt, nil
}

// partitionRecord is the stored form of a partition's epoch and floor. On
// a shared backend it also names the owner (its node and consumer), counts
// the changes that settled or moved deliveries (Seq), which fences every
// change against those made since its author read them, and holds the
// settles made on other nodes than the owner's that the owner has not
// taken in yet (Inbox; shared.go).
type partitionRecord struct {
	Epoch    uint64       `json:"epoch"`
	Floor    uint64       `json:"floor"`
	Node     string       `json:"node,omitempty"`
	Consumer string       `json:"consumer,omitempty"`
	Seq      uint64       `json:"seq,omitempty"`
	Inbox    []inboxEntry `json:"inbox,omitempty"`
}

// same reports whether r and o agree on everything but their inboxes.
func (r partitionRecord) same(o partitionRecord) bool {
	return r.Epoch == o.Epoch && r.Floor == o.Floor && r.Node == o.Node && r.Consumer == o.Consumer && r.Seq == o.Seq
}

// inboxEntry is a settle of one delivery made on a node that does not hold
// the partition: its token's epoch, event and attempt, the action, and for
// a retry when (Unix nanoseconds) the event is due again.
type inboxEntry struct {
	Epoch   uint64 `json:"epoch"`
	EventID uint64 `json:"id"`
	Attempt int    `json:"attempt"`
	Action  Action `json:"action,omitempty"`
	RetryAt int64  `json:"retryAt,omitempty"`
}

// deliveryRecord is the stored form of an event above a floor: its attempt
// while in flight, or settled.
type deliveryRecord struct {
	Attempt int  `json:"attempt,omitempty"`
	Settled bool `json:"settled,omitempty"`
}

// value returns r as stored: what json.Marshal makes of it, without its
// reflection (a drain stores one per delivery).
func (r deliveryRecord) value() []byte {
	out := append(make([]byte, 0, 32), '{')
	if r.Attempt != 0 {
		out = strconv.AppendInt(append(out, `"attempt":`...), int64(r.Attempt), 10)
	}
	if r.Settled {
		if r.Attempt != 0 {
			out = append(out, ',')
		}
		out = append(out, `"settled":true`...)
	}
	return append(out, '}')
}

// ParkedRecord is the stored form of a parked event.
type parkedRecord struct {
	Partition int       `json:"partition"`
	Attempts  int       `json:"attempts"`
	At        time.Time `json:"parkedAt"`
	Reason    string    `json:"reason,omitempty"`
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // the records are plain structs
	}
	return raw
}

// changes returns the changes of feature state that take the stored
// partition p of subscription name from before to after. It walks both
// in id order, allocating nothing but the changes.
func changes(name string, p int, before, after *Partition) []store.Change {
	var out []store.Change
	if before.Epoch != after.Epoch || before.floor != after.floor {
		out = append(out, store.Change{Space: spacePartitions, Key: partitionKey(name, p),
			Value: mustJSON(partitionRecord{Epoch: after.Epoch, Floor: after.floor}), Expect: store.AnyVersion})
	}
	out = diff(out, spaceDeliveries, name, p, walk{settled: before.settled, inFlight: before.inFlight}, walk{settled: after.settled, inFlight: after.inFlight})
	return diff(out, spaceReplays, name, p, walk{inFlight: before.replays}, walk{inFlight: after.replays})
}

// diff appends the changes of space that take the records of partition p
// of subscription name from those of old to those of new.
func diff(out []store.Change, space, name string, p int, old, new walk) []store.Change {
	put := func(e entry) store.Change {
		return store.Change{Space: space, Key: deliveryKey(name, p, e.id), Value: e.rec.value(), Expect: store.AnyVersion}
	}
	o, oldOK := old.next()
	n, newOK := new.next()
	for oldOK || newOK {
		switch {
		case !newOK || (oldOK && o.id < n.id): // gone
			out = append(out, store.Change{Space: space, Key: deliveryKey(name, p, o.id), Expect: store.AnyVersion})
			o, oldOK = old.next()
		case !oldOK || n.id < o.id: // added
			out = append(out, put(n))
			n, newOK = new.next()
		default: // in both
			if o.rec != n.rec {
				out = append(out, put(n))
			}
			o, oldOK = old.next()
			n, newOK = new.next()
		}
	}
	return out
}

// entry is the record of one event above a partition's floor.
type entry struct {
	id  uint64
	rec deliveryRecord
}

// walk yields the records of a partition's events above its floor in id
// order: its settled ids and its deliveries in flight (each ascending,
// merged), or, over replays as inFlight, its replays.
type walk struct {
	settled  []uint64
	inFlight []Delivery
}

func (w *walk) next() (entry, bool) {
	switch {
	case len(w.settled) > 0 && (len(w.inFlight) == 0 || w.settled[0] < w.inFlight[0].EventID):
		e := entry{w.settled[0], deliveryRecord{Settled: true}}
		w.settled = w.settled[1:]
		return e, true
	case len(w.inFlight) > 0:
		e := entry{w.inFlight[0].EventID, deliveryRecord{Attempt: w.inFlight[0].Attempt}}
		w.inFlight = w.inFlight[1:]
		return e, true
	}
	return entry{}, false
}

// loadSnapshots reads the stored partitions of subscription name, and
// their stored owners and change counts, as one moment left them.
func loadSnapshots(s *store.Store, name string, partitions int) ([]Snapshot, []partitionRecord, error) {
	out := make([]Snapshot, partitions)
	recs := make([]partitionRecord, partitions)
	err := s.ViewStates(func(r store.StateReader) error {
		for p := range out {
			pr, err := readPartitionRecord(r, name, p)
			if err != nil {
				return err
			}
			out[p], recs[p] = Snapshot{Epoch: pr.Epoch, Floor: pr.Floor}, pr
		}
		err := eachRecord(r, spaceDeliveries, name, name+"/", partitions, func(p int, id uint64, dr deliveryRecord) {
			addDelivery(&out[p], id, dr)
		})
		if err != nil {
			return err
		}
		return eachRecord(r, spaceReplays, name, name+"/", partitions, func(p int, id uint64, dr deliveryRecord) {
			out[p].Replays = append(out[p].Replays, SnapshotAttempt{EventID: id, Attempt: dr.Attempt})
		})
	})
	return out, recs, err
}

// loadPartition reads partition p of subscription name: its snapshot and
// its record, as one moment left them. Read one after the other, another
// node's commit in between could pair a record with deliveries it never
// had: an old floor with a settle taken in, a position that went back.
func loadPartition(s *store.Store, name string, p, partitions int) (snap Snapshot, pr partitionRecord, err error) {
	err = s.ViewStates(func(r store.StateReader) error {
		if pr, err = readPartitionRecord(r, name, p); err != nil {
			return err
		}
		snap = Snapshot{Epoch: pr.Epoch, Floor: pr.Floor}
		prefix := partitionKey(name, p) + "/"
		err := eachRecord(r, spaceDeliveries, name, prefix, partitions, func(_ int, id uint64, dr deliveryRecord) {
			addDelivery(&snap, id, dr)
		})
		if err != nil {
			return err
		}
		return eachRecord(r, spaceReplays, name, prefix, partitions, func(_ int, id uint64, dr deliveryRecord) {
			snap.Replays = append(snap.Replays, SnapshotAttempt{EventID: id, Attempt: dr.Attempt})
		})
	})
	return snap, pr, err
}

// readPartitionRecord reads the record of partition p of subscription
// name; errPartitionGone when there is none (the subscription was deleted).
func readPartitionRecord(s store.StateReader, name string, p int) (partitionRecord, error) {
	var pr partitionRecord
	r, found, err := s.State(spacePartitions, partitionKey(name, p))
	if err != nil {
		return pr, err
	}
	if !found {
		return pr, fmt.Errorf("subscription %s: partition %d: %w", name, p, errPartitionGone)
	}
	if err := json.Unmarshal(r.Value, &pr); err != nil {
		return pr, fmt.Errorf("subscription %s, partition %d: %w", name, p, err)
	}
	return pr, nil
}

// errPartitionGone reports a partition without its record.
var errPartitionGone = errors.New("the partition is not stored")

// addDelivery adds the record of event id to snap.
func addDelivery(snap *Snapshot, id uint64, dr deliveryRecord) {
	if dr.Settled {
		snap.Settled = append(snap.Settled, id)
	} else {
		snap.InFlight = append(snap.InFlight, SnapshotAttempt{EventID: id, Attempt: dr.Attempt})
	}
}

// eachRecord calls fn with every record of space of subscription name,
// keyed <name>/<partition>/<id>, whose key starts with prefix, in key
// order.
func eachRecord(s store.StateReader, space, name, prefix string, partitions int, fn func(p int, id uint64, dr deliveryRecord)) error {
	it := s.States(space, prefix)
	for it.Next() {
		r := it.Record()
		parts := strings.Split(strings.TrimPrefix(r.Key, name+"/"), "/")
		err := fmt.Errorf("key %q", r.Key)
		var p int
		var id uint64
		var dr deliveryRecord
		if len(parts) == 2 {
			if p, err = strconv.Atoi(parts[0]); err == nil {
				id, err = strconv.ParseUint(parts[1], 10, 64)
			}
			if err == nil && p >= partitions {
				err = fmt.Errorf("key %q of partition %d of %d", r.Key, p, partitions)
			}
			if err == nil {
				err = json.Unmarshal(r.Value, &dr)
			}
		}
		if err != nil {
			it.Close()
			return fmt.Errorf("subscription %s: record of %s: %w", name, space, err)
		}
		fn(p, id, dr)
	}
	return it.Close()
}
