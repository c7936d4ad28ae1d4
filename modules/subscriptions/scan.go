package subscriptions

import (
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// scanner is one scan of a subscription's new events (subscription.scan):
// what it reads and for whom, and how far it got. The scan's time is
// passed to the steps that deliver rather than kept here: Deliver keeps
// it, and escape analysis would then move all a scanner points to (the
// owners, the batch) to the heap.
type scanner struct {
	sub    *subscription
	view   *store.View
	c      *Consumer            // the consumer polling: its deliveries are sent
	mine   *batch               // c's batch
	owners map[string]*Consumer // the consumers, by name
	budget int                  // most deliveries: a batch for each consumer
	ahead  int                  // most records of a consumer's read-ahead

	to  uint64 // the last event id looked at
	cut bool   // it stopped before the end of the view with partitions that take more

	delivered int
	waiting   int // sent, their records not in mine yet
}

// taken is a delivery a scan made, waiting for its record.
type taken struct {
	p    *Partition
	d    Delivery
	send bool
}

// open reports whether partition p takes more: room in its window and in
// its owner's batch (c's) or read-ahead (the others'). The caller holds
// sub.mu.
func (s *scanner) open(p *Partition) bool {
	o := s.owners[p.Owner]
	return o != nil && p.Room() > 0 && ((o == s.c && !s.mine.full()) || o.ahead.room(s.ahead))
}

// anyOpen reports whether some partition takes more. The caller holds
// sub.mu.
func (s *scanner) anyOpen() bool {
	for _, p := range s.sub.parts {
		if s.open(p) {
			return true
		}
	}
	return false
}

// start returns where the scan reads from: the lowest cursor of the
// partitions that take more; false when none does. The caller holds
// sub.mu.
func (s *scanner) start() (from uint64, any bool) {
	for _, p := range s.sub.parts {
		if s.open(p) && (!any || p.Cursor() < from) {
			from, any = p.Cursor(), true
		}
	}
	return from, any
}

// take delivers the matching event id of partition if it takes it now
// (its record comes later); stop says that the scan ends before it: the
// budget is spent, or no partition takes more. The caller holds sub.mu.
func (s *scanner) take(partition int, id uint64, now time.Time) (t taken, ok, stop bool, err error) {
	if s.delivered >= s.budget {
		s.to, s.cut = id-1, true // the events before this one were looked at
		return taken{}, false, true, nil
	}
	p := s.sub.parts[partition]
	if id < p.Cursor() {
		return taken{}, false, false, nil
	}
	if !s.open(p) {
		if !s.anyOpen() {
			s.to, s.cut = id-1, false // the windows are full: settles make room
			return taken{}, false, true, nil
		}
		return taken{}, false, false, nil
	}
	send := p.Owner == s.c.Name && !s.mine.full() && len(s.mine.out)+s.waiting < s.mine.limit
	d, ok, err := p.Deliver(id, now, send)
	if err != nil {
		return taken{}, false, true, err
	}
	s.sub.lag.passed(p.Index, id)
	if ok {
		s.delivered++
	}
	return taken{p, d, send && ok}, ok, false, nil
}

// hand gives the delivery t its record rec: into mine when it is sent,
// else into its owner's read-ahead. The caller holds sub.mu.
func (s *scanner) hand(t taken, rec event.Record) {
	if t.send {
		s.mine.add(Delivered{Token: s.sub.token(t.p, t.d), Record: rec})
	} else {
		s.owners[t.p.Owner].ahead.put(t.p.Index, rec)
	}
}

// takeRouted takes the remembered events (routes) from from up to s.to,
// reading their records by id, 256 at a time; stopped says that take
// stopped the scan. The caller holds sub.mu.
func (s *scanner) takeRouted(from uint64, now time.Time) (stopped bool, err error) {
	routes := &s.sub.routes
	var chunk []taken
	var ids []uint64
	for i := routes.after(from); i < len(routes.ids) && routes.ids[i] <= s.to; i++ {
		t, ok, stop, err := s.take(int(routes.parts[i]), routes.ids[i], now)
		if err != nil {
			return false, err
		}
		if stopped = stop; stop {
			break
		}
		if ok {
			if t.send {
				s.waiting++
			}
			chunk, ids = append(chunk, t), append(ids, routes.ids[i])
			if len(ids) == 256 {
				if err := s.handRead(chunk, ids); err != nil {
					return false, err
				}
				chunk, ids = chunk[:0], ids[:0]
			}
		}
	}
	if err := s.handRead(chunk, ids); err != nil {
		return false, err
	}
	return stopped, nil
}

// handRead reads the records of ids, those of the deliveries chunk, and
// hands them; none is waiting then. The caller holds sub.mu.
func (s *scanner) handRead(chunk []taken, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	got, err := recordsOf(s.view, ids)
	for i, rec := range got {
		s.hand(chunk[i], rec)
	}
	s.waiting = 0
	return err
}

// readLog takes the matching events of the log from next up to s.to, in
// id order, until take stops the scan; with keep, it remembers their
// partitions (routes). The caller holds sub.mu.
func (s *scanner) readLog(next uint64, keep bool, now time.Time) error {
	routes := &s.sub.routes
	err := s.sub.read(s.view, next, s.to, func(partition int, rec event.Record) (bool, error) {
		t, ok, stop, err := s.take(partition, rec.ID, now)
		if stop || err != nil {
			return true, err
		}
		if keep {
			routes.add(rec.ID, partition)
		}
		if ok {
			s.hand(t, rec)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if keep {
		routes.extend(s.to + 1) // to is where the reading stopped
	}
	return nil
}

// skip moves the cursors of the partitions that take more past s.to:
// every event of them up to it was delivered. The caller holds sub.mu.
func (s *scanner) skip() {
	for _, p := range s.sub.parts {
		if s.open(p) {
			p.Skip(s.to + 1)
			s.sub.lag.skipped(p.Index, s.to+1)
		}
	}
}
