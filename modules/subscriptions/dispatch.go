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
// stopped before the end of the view with partitions that take more.
func (sub *subscription) scan(view *store.View, now time.Time, c *Consumer, mine *batch, limit int) (cut bool, err error) {
	owners := make(map[string]*Consumer, len(sub.consumers))
	for _, o := range sub.consumers {
		owners[o.Name] = o
	}
	budget, ahead := limit*len(sub.consumers), aheadBatches*limit
	open := func(p *Partition) bool {
		o := owners[p.Owner]
		return o != nil && p.Room() > 0 && ((o == c && !mine.full()) || o.ahead.room(ahead))
	}
	from, any := uint64(0), false
	for _, p := range sub.parts {
		if open(p) && (!any || p.Cursor() < from) {
			from, any = p.Cursor(), true
		}
	}
	count := view.Count()
	if !any || from >= count {
		return false, nil
	}
	to := min(count, from+maxScan) - 1
	cut = to < count-1
	delivered, waiting := 0, 0 // waiting: sent, their records not in mine yet
	// take delivers the matching event id of partition if it takes it now
	// (its record comes later); stop says that the scan ends before it:
	// the budget is spent, or no partition takes more.
	take := func(partition int, id uint64) (t taken, ok, stop bool, err error) {
		if delivered >= budget {
			to, cut = id-1, true // the events before this one were looked at
			return taken{}, false, true, nil
		}
		p := sub.parts[partition]
		if id < p.Cursor() {
			return taken{}, false, false, nil
		}
		if !open(p) {
			if !slices.ContainsFunc(sub.parts, open) {
				to, cut = id-1, false // the windows are full: settles make room
				return taken{}, false, true, nil
			}
			return taken{}, false, false, nil
		}
		send := p.Owner == c.Name && !mine.full() && len(mine.out)+waiting < mine.limit
		d, ok, err := p.Deliver(id, now, send)
		if err != nil {
			return taken{}, false, true, err
		}
		sub.lag.passed(p.Index, id)
		if ok {
			delivered++
		}
		return taken{p, d, send && ok}, ok, false, nil
	}
	hand := func(t taken, rec event.Record) {
		if t.send {
			mine.add(Delivered{Token: sub.token(t.p, t.d), Record: rec})
		} else {
			owners[t.p.Owner].ahead.put(t.p.Index, rec)
		}
	}
	// With several consumers, the partitions of the events read are
	// remembered (routes): the events a poll passed over because their
	// partitions took nothing then are read later by id, not the log
	// between them again.
	routes := &sub.routes
	keep := len(sub.consumers) > 1
	if keep && !routes.covers(from) {
		routes.reset(from)
	}
	next, stopped := from, false
	if keep && routes.next > from {
		var chunk []taken
		var ids []uint64
		flush := func() error {
			if len(ids) == 0 {
				return nil
			}
			got, err := recordsOf(view, ids)
			for i, rec := range got {
				hand(chunk[i], rec)
			}
			chunk, ids, waiting = chunk[:0], ids[:0], 0
			return err
		}
		for i := routes.after(from); i < len(routes.ids) && routes.ids[i] <= to; i++ {
			t, ok, stop, err := take(int(routes.parts[i]), routes.ids[i])
			if err != nil {
				return false, err
			}
			if stopped = stop; stop {
				break
			}
			if ok {
				if t.send {
					waiting++
				}
				chunk, ids = append(chunk, t), append(ids, routes.ids[i])
				if len(ids) == 256 {
					if err := flush(); err != nil {
						return false, err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return false, err
		}
		next = routes.next
	}
	if !stopped && next <= to {
		err := sub.read(view, next, to, func(partition int, rec event.Record) (bool, error) {
			t, ok, stop, err := take(partition, rec.ID)
			if stop || err != nil {
				return true, err
			}
			if keep {
				routes.add(rec.ID, partition)
			}
			if ok {
				hand(t, rec)
			}
			return false, nil
		})
		if err != nil {
			return false, err
		}
		if keep {
			routes.extend(to + 1) // to is where the reading stopped
		}
	}
	for _, p := range sub.parts {
		if open(p) {
			p.Skip(to + 1) // every event of it up to to was delivered
		}
	}
	return cut, nil
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

// taken is a delivery a scan made, waiting for its record.
type taken struct {
	p    *Partition
	d    Delivery
	send bool
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
