package subscriptions

import (
	"context"
	"errors"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Connect adds the consumer name to the subscription sub and spreads the
// partitions again (Assign). A consumer of the same name is replaced: it
// ends with ErrReplaced, and its partitions move to the new one (their
// epochs rise, so its tokens are stale). Consuming goes on in read-only
// mode.
func (m *Manager) Connect(ctx context.Context, subscriptionName, name string) (*Consumer, error) {
	return lookingAgain(m, func() (*Consumer, error) { return m.connect(ctx, subscriptionName, name) })
}

// connect is Connect once.
func (m *Manager) connect(ctx context.Context, subscriptionName, name string) (*Consumer, error) {
	sub, err := m.lookup(subscriptionName)
	if err != nil {
		return nil, err
	}
	if m.shared != nil && !m.shared.valid() {
		if err := m.renew(ctx, true); err != nil {
			return nil, err
		}
	}
	sub.mu.Lock()
	defer sub.unlock()
	if sub.deleted {
		return nil, ErrNotFound
	}
	c := &Consumer{Name: name, ConnectedAt: m.now().UTC(), sub: sub, ended: make(chan struct{}), changed: make(chan struct{}),
		woken: make(chan struct{}, 1)}
	if m.shared != nil {
		return c, m.connectShared(ctx, sub, c)
	}
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
	defer sub.unlock()
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
	if m.shared != nil {
		sub.consumers = rest
		return m.disconnectShared(ctx, sub, c)
	}
	return m.rebalance(ctx, sub, rest, "")
}

// connectShared adds c to sub on a shared backend: it records c as this
// node's consumer (a consumer of its name elsewhere is replaced: its node
// ends it when it sees this) and reconciles. The caller holds sub.mu.
func (m *Manager) connectShared(ctx context.Context, sub *subscription, c *Consumer) error {
	if err := m.register(ctx, sub, c, store.AnyVersion); err != nil {
		return m.missing(sub, err) // deleted on another node: not found
	}
	consumers := []*Consumer{}
	for _, old := range sub.consumers {
		if old.Name == c.Name {
			old.end(ErrReplaced)
			continue
		}
		consumers = append(consumers, old)
	}
	sub.consumers = append(consumers, c)
	m.observe(ctx)                    // the other nodes' leases, before taking what they hold
	_ = m.reconcile(ctx, sub, c.Name) // else the next tick does
	return nil
}

// disconnectShared removes the record of c, if it is still this node's,
// and reconciles: c's partitions go. The caller holds sub.mu.
func (m *Manager) disconnectShared(ctx context.Context, sub *subscription, c *Consumer) error {
	reg, err := m.registry(sub)
	if err != nil {
		return err
	}
	if e, ok := reg[c.Name]; ok && e.Node == m.shared.node {
		_, err := m.store.Commit(ctx, store.Request{InReadOnly: true, Changes: []store.Change{{Space: spaceConsumers,
			Key: sub.def.Name + "/" + c.Name, Expect: e.version}}})
		if err != nil {
			return err
		}
	}
	m.observe(ctx)
	return m.reconcile(ctx, sub, "")
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
	for name := range touched {
		sub.notify(name)
	}
	return nil
}

// wake tells the consumer name, if connected, to poll: it has something
// to do that no commit of events announced. The caller holds sub.mu.
func (sub *subscription) wake(name string) {
	for _, c := range sub.consumers {
		if c.Name == name {
			select {
			case c.woken <- struct{}{}:
			default:
			}
		}
	}
}

// replaced ends the consumer name, if connected, with ErrReplaced: a
// consumer of its name connected on another node. The caller holds
// sub.mu.
func (sub *subscription) replaced(name string) {
	kept := sub.consumers[:0:0]
	for _, c := range sub.consumers {
		if c.Name == name {
			c.end(ErrReplaced)
			continue
		}
		kept = append(kept, c)
	}
	sub.consumers = kept
}

// notify tells the consumer name, if connected, that its partitions
// changed. The caller holds sub.mu.
func (sub *subscription) notify(name string) {
	for _, c := range sub.consumers {
		if c.Name == name {
			close(c.changed)
			c.changed = make(chan struct{})
		}
	}
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
	defer sub.unlock()
	if c.err != nil {
		return nil, false, c.err
	}
	owned, parts := sub.pollable(c.Name)
	if len(owned) == 0 || (m.shared != nil && !m.shared.valid()) {
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
		parkedChanges, n, err := sub.takeDue(view, now, c, owned, mine)
		parkedCount = n
		if err != nil || mine.full() {
			return parkedChanges, err
		}
		more, err = sub.scan(view, now, c, mine, m.batch)
		return parkedChanges, err
	})
	if errors.Is(err, errFenced) {
		// Another node changed a partition: read them again, and poll again.
		if err := m.reread(sub); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	sub.countOutcomes(owned, parkedCount)
	more = more || sub.dueNow(owned, now) // left for the next batch
	sub.pruneAhead(c)
	return mine.out, more || mine.full(), nil
}

// work reports whether a poll of the partitions owned has anything to
// do now: a delivery of them due, room and events after the cursor in a
// log of count events, or settles made elsewhere to take in. (Those of
// other consumers are their own polls' to find; every commit wakes those
// too.)
func (sub *subscription) work(owned []int, now time.Time, count uint64) bool {
	for _, i := range owned {
		p := sub.parts[i]
		if len(sub.recs[i].Inbox) > 0 {
			return true
		}
		if due, ok := p.NextDue(); ok && !due.After(now) {
			return true
		}
		if p.Room() > 0 && p.Cursor() < count {
			return true
		}
	}
	return false
}

// NextDue returns when the first delivery of c's partitions is due again,
// false when none is in flight.
func (m *Manager) NextDue(c *Consumer) (time.Time, bool) {
	if m.shared != nil && !m.shared.valid() {
		return m.now().Add(RenewInterval / 4), true // look again once the lease is renewed
	}
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
