package subscriptions

import (
	"bytes"
	"context"
	"errors"
	"math"
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
)

// Poll returns what c is to receive now, after making it durable: the
// deliveries of its partitions that are due again (their attempt raised;
// those out of attempts are parked instead), then new events of its
// partitions in id order, as far as their windows take them; at most a
// batch (m.batch deliveries, about pollBytes of events), and more says
// that there is more to send at once: poll again. It fails with c's end
// (ErrReplaced, ErrDeleted) or the store's error.
func (m *Manager) Poll(ctx context.Context, c *Consumer) (out []Delivered, more bool, err error) {
	sub := c.sub
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if c.err != nil {
		return nil, false, c.err
	}
	var owned []int
	for i, p := range sub.parts {
		if p.Owner == c.Name {
			owned = append(owned, i)
		}
	}
	if len(owned) == 0 {
		return nil, false, nil
	}
	now := m.now()
	view := m.store.View()
	parkedCount := 0
	_, err = sub.commit(ctx, m.store, store.Request{InReadOnly: true}, owned, func() ([]store.Change, error) {
		var parkedChanges []store.Change
		size := 0
		for _, i := range owned {
			if len(out) >= m.batch || size >= pollBytes {
				more = true
				break
			}
			p := sub.parts[i]
			again, parked := p.Due(now, m.batch-len(out))
			for _, d := range again {
				rec, err := recordOf(view, d.EventID)
				if err != nil {
					return nil, err
				}
				out = append(out, Delivered{Token: sub.token(p, d), Record: rec})
				size += len(rec.JSON)
			}
			for _, pk := range parked {
				parkedChanges = append(parkedChanges, parkChange(sub.def.Name, p.Index, pk))
			}
			parkedCount += len(parked)
		}
		if more {
			return parkedChanges, nil
		}
		var err error
		out, more, err = sub.scan(view, owned, now, m.batch, out, size)
		return parkedChanges, err
	})
	if err != nil {
		return nil, false, err
	}
	for _, i := range owned {
		sub.outcomes.TimedOut += uint64(sub.parts[i].TakeTimeouts())
	}
	sub.outcomes.Parked += uint64(parkedCount)
	return out, more, nil
}

// scan appends to out, which holds size bytes of events, the new events of
// the partitions owned that have room, reading the view from the lowest of
// their cursors, until out holds a batch (batch deliveries, pollBytes);
// more says that it stopped before the end of the view (the batch was
// full, or maxScan was read).
func (sub *subscription) scan(view *store.View, owned []int, now time.Time, batch int, out []Delivered, size int) ([]Delivered, bool, error) {
	from, any := uint64(0), false
	for _, i := range owned {
		if p := sub.parts[i]; p.Room() > 0 && (!any || p.Cursor() < from) {
			from, any = p.Cursor(), true
		}
	}
	count := view.Count()
	switch {
	case !any || from >= count:
		return out, false, nil
	case len(out) >= batch || size >= pollBytes:
		return out, true, nil
	}
	to := min(count, from+maxScan) - 1
	more := to < count-1
	var sc jsonscan.Scanner
	it := view.Scan(store.Scan{Subject: sub.def.Subject, Recursive: sub.def.Options.Recursive, From: from, To: to})
	for it.Next() {
		if len(out) >= batch || size >= pollBytes {
			to, more = it.Record().ID-1, true // the events before this one were looked at
			break
		}
		rec := it.Record()
		subject, eventType, err := rec.SubjectAndType(&sc)
		if err != nil {
			it.Close()
			return nil, false, err
		}
		if !sub.def.Matches(subject, eventType) {
			continue
		}
		p := sub.parts[PartitionOf(subject, len(sub.parts))]
		if !ownedBy(owned, p.Index) || rec.ID < p.Cursor() {
			continue
		}
		if p.Room() == 0 {
			if allFull(sub, owned) {
				more = false // the windows are full: settles make room
				break
			}
			continue
		}
		d, ok, err := p.Deliver(rec.ID, now)
		if err != nil {
			it.Close()
			return nil, false, err
		}
		if ok {
			out = append(out, Delivered{Token: sub.token(p, d), Record: event.Record{ID: rec.ID, JSON: bytes.Clone(rec.JSON)}})
			size += len(rec.JSON)
		}
	}
	if err := it.Close(); err != nil {
		return nil, false, err
	}
	for _, i := range owned {
		if p := sub.parts[i]; p.Room() > 0 {
			p.Skip(to + 1) // every event of it up to to was delivered
		}
	}
	return out, more, nil
}

func ownedBy(owned []int, p int) bool {
	for _, i := range owned {
		if i == p {
			return true
		}
	}
	return false
}

// allFull reports whether no partition owned has room.
func allFull(sub *subscription, owned []int) bool {
	for _, i := range owned {
		if sub.parts[i].Room() > 0 {
			return false
		}
	}
	return true
}

func (sub *subscription) token(p *Partition, d Delivery) Token {
	return Token{Subscription: sub.def.Name, Partition: p.Index, Epoch: p.Epoch, EventID: d.EventID, Attempt: d.Attempt}
}

// recordOf returns the record of id in view.
func recordOf(view *store.View, id uint64) (event.Record, error) {
	it := view.Scan(store.Scan{From: id, To: id})
	defer it.Close()
	if !it.Next() {
		if err := it.Close(); err != nil {
			return event.Record{}, err
		}
		return event.Record{}, errors.New("a delivered event is missing")
	}
	r := it.Record()
	return event.Record{ID: r.ID, JSON: bytes.Clone(r.JSON)}, nil
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
// partitions' positions that are neither in flight nor settled. It reads
// the log from the lowest position on.
func (m *Manager) Lag(name string) (uint64, error) {
	sub, err := m.lookup(name)
	if err != nil {
		return 0, err
	}
	sub.mu.Lock()
	floors := make([]uint64, len(sub.parts))
	done := make([]map[uint64]bool, len(sub.parts))
	from := uint64(math.MaxUint64)
	for i, p := range sub.parts {
		floors[i], from = p.floor, min(from, p.floor)
		done[i] = map[uint64]bool{}
		for _, id := range p.settled {
			done[i][id] = true
		}
		for _, d := range p.inFlight {
			done[i][d.EventID] = true
		}
	}
	def := sub.def
	sub.mu.Unlock()
	view := m.store.View()
	if from >= view.Count() {
		return 0, nil
	}
	var lag uint64
	it := view.Scan(store.Scan{Subject: def.Subject, Recursive: def.Options.Recursive, From: from, To: view.Count() - 1})
	var sc jsonscan.Scanner
	for it.Next() {
		subject, eventType, err := it.Record().SubjectAndType(&sc)
		if err != nil {
			it.Close()
			return 0, err
		}
		if !def.Matches(subject, eventType) {
			continue
		}
		p := PartitionOf(subject, len(floors))
		if id := it.Record().ID; id >= floors[p] && !done[p][id] {
			lag++
		}
	}
	return lag, it.Close()
}
