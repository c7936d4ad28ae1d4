package subscriptions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Connect adds the consumer name to the subscription sub and spreads the
// partitions again (Assign). A consumer of the same name is replaced: it
// ends with ErrReplaced, and its partitions move to the new one (their
// epochs rise, so its tokens are stale). Consuming goes on in read-only
// mode.
func (m *Manager) Connect(ctx context.Context, subscriptionName, name string) (*Consumer, error) {
	sub, err := m.lookup(subscriptionName)
	if err != nil {
		return nil, err
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.deleted {
		return nil, ErrNotFound
	}
	c := &Consumer{Name: name, ConnectedAt: m.now().UTC(), sub: sub, ended: make(chan struct{}), changed: make(chan struct{})}
	consumers := []*Consumer{}
	var replaced *Consumer
	for _, old := range sub.consumers {
		if old.Name == name {
			replaced = old
			continue
		}
		consumers = append(consumers, old)
	}
	if err := m.rebalance(ctx, sub, append(consumers, c), name); err != nil {
		return nil, err
	}
	if replaced != nil {
		replaced.end(ErrReplaced)
	}
	return c, nil
}

// Disconnect removes c from its subscription, and its partitions move to
// the consumers left.
func (m *Manager) Disconnect(ctx context.Context, c *Consumer) error {
	sub := c.sub
	sub.mu.Lock()
	defer sub.mu.Unlock()
	i := -1
	for j, other := range sub.consumers {
		if other == c {
			i = j
		}
	}
	if i < 0 {
		return nil // replaced, or its subscription deleted
	}
	rest := append(sub.consumers[:i:i], sub.consumers[i+1:]...)
	return m.rebalance(ctx, sub, rest, "")
}

// rebalance gives sub the consumers and moves its partitions to the owners
// Assign picks, those of the consumer named replaced too; it commits the
// new epochs and tells every consumer whose partitions changed. The caller
// holds sub.mu.
func (m *Manager) rebalance(ctx context.Context, sub *subscription, consumers []*Consumer, replaced string) error {
	owners := make([]string, len(sub.parts))
	for i, p := range sub.parts {
		owners[i] = p.Owner
	}
	names := make([]string, len(consumers))
	for i, c := range consumers {
		names[i] = c.Name
	}
	next := Assign(owners, names)
	touched := map[string]bool{}
	var moved []int
	for i, p := range sub.parts {
		if next[i] != p.Owner || (replaced != "" && p.Owner == replaced) {
			moved = append(moved, i)
			touched[p.Owner], touched[next[i]] = true, true
		}
	}
	if len(moved) > 0 {
		_, err := sub.commit(ctx, m.store, store.Request{InReadOnly: true}, moved, func() ([]store.Change, error) {
			for _, i := range moved {
				sub.parts[i].Move(next[i])
			}
			return nil, nil
		})
		if err != nil {
			return err
		}
	}
	sub.consumers = consumers
	for _, c := range consumers {
		if touched[c.Name] {
			close(c.changed)
			c.changed = make(chan struct{})
		}
	}
	return nil
}

// Delivered is one delivery of an event to a consumer.
type Delivered struct {
	Token  Token
	Record event.Record // the stored record, the handler's to render
}

// Bounds of one Poll. maxScan bounds the events it looks at for new
// deliveries, so that a poll of a subscription whose events are rare in
// the log ends soon; pollLimit and pollBytes bound what it returns, so that
// a consumer's windows, however large, are sent a batch at a time and
// memory holds one batch. The next poll goes on from there.
const (
	maxScan   = 100_000
	pollLimit = 1000 // Manager.batch by default
	pollBytes = 4 << 20
	// aheadBatches is how many batches a consumer's read-ahead holds.
	aheadBatches = 4
)

// Poll returns what c is to receive now, after making it durable: the
// deliveries of its partitions that are due (not sent yet, to resend, or
// due again with their attempt raised; those out of attempts are parked
// instead), then new events of its partitions in id order, as far as their
// windows take them; at most a batch (m.batch deliveries, about pollBytes
// of events), and more says that there is more to send at once: poll
// again. It fails with c's end (ErrReplaced, ErrDeleted) or the store's
// error.
//
// The log is read once for every consumer of the subscription: a poll
// delivers the new events of the other consumers' partitions too, as far
// as their windows take them; those deliveries are due at once for their
// owners' polls (the commit wakes them), which find their records in their
// read-ahead (a batch's worth) or read them by id.
func (m *Manager) Poll(ctx context.Context, c *Consumer) (out []Delivered, more bool, err error) {
	sub := c.sub
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if c.err != nil {
		return nil, false, c.err
	}
	var owned, parts []int
	for i, p := range sub.parts {
		if p.Owner == c.Name {
			owned = append(owned, i)
		}
		if p.Owner == c.Name || (p.Owner != "" && p.Room() > 0) {
			parts = append(parts, i) // what this poll may change
		}
	}
	if len(owned) == 0 {
		return nil, false, nil
	}
	now := m.now()
	view := m.store.View()
	if !sub.work(owned, now, view.Count()) {
		return nil, false, nil // woken by a commit that left it nothing
	}
	mine := &batch{limit: m.batch}
	parkedCount := 0
	_, err = sub.commit(ctx, m.store, store.Request{InReadOnly: true}, parts, func() ([]store.Change, error) {
		var parkedChanges []store.Change
		for _, i := range owned {
			if mine.full() {
				break
			}
			p := sub.parts[i]
			again, parked := p.Due(now, m.batch-len(mine.out))
			for _, d := range again {
				rec, ok := c.ahead.take(d.EventID)
				if !ok {
					var err error
					if rec, err = view.Record(d.EventID); err != nil {
						return nil, err
					}
				}
				mine.add(Delivered{Token: sub.token(p, d), Record: rec})
			}
			for _, pk := range parked {
				parkedChanges = append(parkedChanges, parkChange(sub.def.Name, p.Index, pk))
			}
			parkedCount += len(parked)
		}
		if mine.full() {
			return parkedChanges, nil
		}
		cut, err := sub.scan(view, now, c, mine, m.batch)
		more = cut
		return parkedChanges, err
	})
	if err != nil {
		return nil, false, err
	}
	for _, i := range owned {
		p := sub.parts[i]
		sub.outcomes.TimedOut += uint64(p.TakeTimeouts())
		if !more {
			if due, ok := p.NextDue(); ok && !due.After(now) {
				more = true // left for the next batch
			}
		}
	}
	sub.outcomes.Parked += uint64(parkedCount)
	c.ahead.prune(func(partition int, id uint64) bool { // what is no longer c's to send
		p := sub.parts[partition]
		i, found := searchDeliveries(p.inFlight, id)
		return p.Owner != c.Name || !found || !p.inFlight[i].Unsent
	})
	return mine.out, more || mine.full(), nil
}

// work reports whether a poll of the partitions owned has anything to
// send now: a delivery of them due, or room and events after the cursor
// in a log of count events. (Those of other consumers are their own polls'
// to find; every commit wakes those too.)
func (sub *subscription) work(owned []int, now time.Time, count uint64) bool {
	for _, i := range owned {
		p := sub.parts[i]
		if due, ok := p.NextDue(); ok && !due.After(now) {
			return true
		}
		if p.Room() > 0 && p.Cursor() < count {
			return true
		}
	}
	return false
}

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
	return Token{Subscription: sub.def.Name, Partition: p.Index, Epoch: p.Epoch, EventID: d.EventID, Attempt: d.Attempt}
}

func parkChange(name string, partition int, pk Parked) store.Change {
	return store.Change{Space: spaceParked, Key: parkedKey(name, pk.EventID),
		Value: mustJSON(parkedRecord{Partition: partition, Attempts: pk.Attempts, At: pk.At.UTC(), Reason: pk.Reason}), Expect: store.AnyVersion}
}

// NextDue returns when the first delivery of c's partitions is due again,
// false when none is in flight.
func (m *Manager) NextDue(c *Consumer) (time.Time, bool) {
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	var next time.Time
	found := false
	for _, p := range c.sub.parts {
		if p.Owner != c.Name {
			continue
		}
		if due, ok := p.NextDue(); ok && (!found || due.Before(next)) {
			next, found = due, true
		}
	}
	return next, found
}

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
