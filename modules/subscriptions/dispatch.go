package subscriptions

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// batch gathers the deliveries a poll sends, up to limit of them or
// pollBytes of events.
type batch struct {
	out   []Delivered
	size  int
	limit int
}

func (b *batch) add(d Delivered) {
	b.out = append(b.out, d)
	b.size += len(d.Record.JSON)
}

func (b *batch) full() bool { return len(b.out) >= b.limit || b.size >= pollBytes }

// scan delivers the new events of the partitions that take more (room in
// the window and in the owner's batch or read-ahead), reading the view
// once from the lowest of their cursors: those of consumer c into mine
// while it has room (sent), the others not sent yet, their records kept in
// their owners' read-ahead; a batch for each consumer in all, until no
// partition takes more or maxScan events were read. cut says that it
// stopped before the end of the view with partitions that take more. The
// caller holds sub.mu.
func (sub *subscription) scan(view *store.View, now time.Time, c *Consumer, mine *batch, limit int) (cut bool, err error) {
	s := scanner{sub: sub, view: view, c: c, mine: mine, owners: make(map[string]*Consumer, len(sub.consumers)),
		budget: limit * len(sub.consumers), ahead: aheadBatches * limit}
	for _, o := range sub.consumers {
		s.owners[o.Name] = o
	}
	from, any := s.start()
	count := view.Count()
	if !any || from >= count {
		return false, nil
	}
	s.to = min(count, from+maxScan) - 1
	s.cut = s.to < count-1
	// With several consumers, the partitions of the events read are
	// remembered (routes): the events a poll passed over because their
	// partitions took nothing then are read later by id, not the log
	// between them again.
	keep := len(sub.consumers) > 1
	if keep && !sub.routes.covers(from) {
		sub.routes.reset(from)
	}
	next, stopped := from, false
	if keep && sub.routes.next > from {
		if stopped, err = s.takeRouted(from, now); err != nil {
			return false, err
		}
		next = sub.routes.next
	}
	if !stopped && next <= s.to {
		if err := s.readLog(next, keep, now); err != nil {
			return false, err
		}
	}
	s.skip()
	return s.cut, nil
}

// readDue reads, in one pass, the records of the deliveries of due whose
// event ids are unread.
func readDue(view *store.View, due []Delivered, unread []uint64) error {
	if len(unread) == 0 {
		return nil
	}
	slices.Sort(unread)
	unread = slices.Compact(unread)
	records, err := recordsOf(view, unread)
	if err != nil {
		return err
	}
	for i := range due {
		if due[i].Record.JSON == nil {
			j, _ := slices.BinarySearch(unread, due[i].Token.EventID)
			due[i].Record = records[j]
		}
	}
	return nil
}

// recordsOf reads the records of ids, ascending, in one pass.
func recordsOf(view *store.View, ids []uint64) ([]event.Record, error) {
	out := make([]event.Record, 0, len(ids))
	it := view.Scan(store.Scan{IDs: ids, From: ids[0], To: ids[len(ids)-1]})
	for it.Next() {
		r := it.Record()
		out = append(out, event.Record{ID: r.ID, JSON: bytes.Clone(r.JSON)})
	}
	if err := it.Close(); err != nil {
		return out, err
	}
	if len(out) != len(ids) {
		return out, fmt.Errorf("read %d of %d delivered events", len(out), len(ids))
	}
	return out, nil
}

// read visits the matching events of the view from..to in id order with
// their partitions, their records copied, until visit stops.
func (sub *subscription) read(view *store.View, from, to uint64, visit func(partition int, rec event.Record) (stop bool, err error)) error {
	var sc jsonscan.Scanner
	it := view.Scan(store.Scan{Subject: sub.def.Subject, Recursive: sub.def.Options.Recursive, From: from, To: to})
	for it.Next() {
		rec := it.Record()
		subject, eventType, err := rec.SubjectAndType(&sc)
		if err != nil {
			it.Close()
			return err
		}
		if !sub.def.Matches(subject, eventType) {
			continue
		}
		stop, err := visit(PartitionOf(subject, len(sub.parts)), event.Record{ID: rec.ID, JSON: bytes.Clone(rec.JSON)})
		if stop || err != nil {
			return errors.Join(err, it.Close())
		}
	}
	return it.Close()
}

func (sub *subscription) token(p *Partition, d Delivery) Token {
	return Token{Subscription: sub.def.Name, Incarnation: sub.incarnation(), Partition: p.Index, Epoch: p.Epoch, EventID: d.EventID, Attempt: d.Attempt}
}

func parkChange(name string, partition int, pk Parked) store.Change {
	return store.Change{Space: spaceParked, Key: parkedKey(name, pk.EventID),
		Value: mustJSON(parkedRecord{Partition: partition, Attempts: pk.Attempts, At: pk.At.UTC(), Reason: pk.Reason}), Expect: store.AnyVersion}
}

// incarnation tells sub apart from the subscriptions of its name before
// and after it (Token.Incarnation).
func (sub *subscription) incarnation() uint64 { return uint64(sub.createdAt.UnixNano()) }

// names reports whether t names a delivery of sub: its name and
// incarnation, and one of its partitions.
func (sub *subscription) names(t Token) bool {
	return t.Subscription == sub.def.Name && t.Incarnation == sub.incarnation() && t.Partition < len(sub.parts)
}
