package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eventstore-service/eventstore/modules/store"
)

// On a shared backend a node with consumers holds a lease: its record in
// subscriptions.nodes, put again every RenewInterval. The partitions whose
// records name the node are its to deliver while the lease is valid, by
// the node's own monotonic clock: until the start of its last successful
// renewal plus the lease timeout less a margin. Another node counts a
// lease as expired once it saw the record unchanged (same version) for the
// whole lease timeout, by its own monotonic clock, from the moment it
// first read that version; that moment comes after the renewal started,
// so the holder stopped delivering a margin before any other node takes
// its partitions. Only the rates of the clocks enter, never their
// readings (docs/operations.md, "Subscriptions across nodes"). The expiring node's record and its
// consumers are then deleted, fenced on the version seen (reap), and the
// partitions pass to the consumers left, with a new epoch that makes the
// old holder's tokens stale even if it wakes up and tries.

// RenewInterval is how often a node with consumers renews its lease and
// brings its partitions in line with the consumers of every node.
const RenewInterval = time.Second

// cluster is what a node of a shared backend knows of the leases.
type cluster struct {
	node    string
	timeout time.Duration
	margin  time.Duration
	now     func() time.Time // the Manager's clock: monotonic readings in production

	stop func()        // ends run
	done chan struct{} // closed when run ended
	// kick wakes run to take in the inboxes of the partitions the node
	// holds (stateChanged).
	kick chan struct{}

	mu         sync.Mutex
	registered bool      // its lease record exists
	validUntil time.Time // when it stops delivering, unless renewed
	seen       map[string]observed
}

// observed is another node's lease record as this node saw it: its
// version, and when this node first saw that version.
type observed struct {
	version uint64
	since   time.Time
}

// nodeRecord is the stored form of a node's lease.
type nodeRecord struct {
	RenewedAt time.Time `json:"renewedAt"` // for people: no node reads it
}

// consumerRecord is the stored form of a connected consumer.
type consumerRecord struct {
	Node        string    `json:"node"`
	ConnectedAt time.Time `json:"connectedAt"`
}

// errReaped tells a node that its lease expired and was taken.
var errReaped = errors.New("the lease of this node expired")

// Share has m serve its subscriptions on a shared backend, as node (a name
// no other node has, e.g. a fresh UUID), whose leases expire leaseTimeout
// after their last renewal. Call it before the store starts (it follows
// the store's state: store.Store.OnStateChanged); Start keeps the leases.
func (m *Manager) Share(node string, leaseTimeout time.Duration) {
	m.shared = &cluster{node: node, timeout: leaseTimeout, margin: min(leaseTimeout/5, 2*time.Second),
		now: func() time.Time { return m.now() }, seen: map[string]observed{}, kick: make(chan struct{}, 1)}
	// The spaces followInboxes reads: a lease renewed or a consumer
	// connected on another node does not kick it.
	m.store.OnStateChanged([]string{spacePartitions, spaceDeliveries, spaceReplays}, func() error {
		m.stateChanged()
		return nil
	})
	m.store.OnStateChanged([]string{spaceParked}, func() error {
		m.parkedChanges.Add(1)
		return nil
	})
}

// Start has a manager of a shared backend renew the node's lease and bring
// the partitions in line with the consumers of every node, every
// RenewInterval until Stop; on a backend of one node it does nothing.
func (m *Manager) Start() {
	if m.shared == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.shared.stop, m.shared.done = cancel, make(chan struct{})
	go func() {
		defer close(m.shared.done)
		m.run(ctx)
	}()
}

// Stop ends the lag counts under way in the background and what Start
// started, and gives up the node's lease, if it holds one, so that other
// nodes need not wait for it to expire. Giving it up is worth a try only:
// a node that cannot reach the database stops all the same, and its lease
// expires.
func (m *Manager) Stop(ctx context.Context) {
	m.stopCounting()
	if m.shared == nil || m.shared.stop == nil {
		return
	}
	m.shared.stop()
	<-m.shared.done
	m.shared.mu.Lock()
	registered := m.shared.registered
	m.shared.mu.Unlock()
	if registered {
		_ = m.renew(ctx, false)
	}
}

// run renews the lease and reconciles every RenewInterval, and takes in
// inboxes when kicked (stateChanged), until ctx ends.
func (m *Manager) run(ctx context.Context) {
	t := time.NewTicker(RenewInterval)
	defer t.Stop()
	for {
		m.tick(ctx)
		for ticked := false; !ticked; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ticked = true
			case <-m.shared.kick:
				m.followInboxes()
			}
		}
	}
}

// stateChanged tells the manager that the store followed other nodes'
// changes of feature state: settles made elsewhere may wait in the inboxes
// of partitions this node holds. It only wakes run: the store's writer
// calls it.
func (m *Manager) stateChanged() {
	select {
	case m.shared.kick <- struct{}{}:
	default: // a kick is pending already
	}
}

// followInboxes reads the partition records of every subscription with
// consumers on this node, and wakes the consumers whose partitions have
// settles made elsewhere waiting in their inboxes, or were changed
// elsewhere (a reset, a replay): their next poll takes them in. The store
// does not wake them for commits of other nodes that changed state alone.
func (m *Manager) followInboxes() {
	for _, sub := range m.all() {
		sub.mu.Lock()
		if len(sub.consumers) > 0 && !sub.deleted {
			before := slices.Clone(sub.recs)
			if err := m.refreshAll(sub); err != nil {
				_ = m.missing(sub, err) // else the next tick tries again
			}
			for i, p := range sub.parts {
				if p.Owner != "" && (len(sub.recs[i].Inbox) > 0 || (i < len(before) && !before[i].same(sub.recs[i]))) {
					sub.wake(p.Owner)
				}
			}
		}
		sub.unlock()
	}
}

// valid reports whether the node may deliver now.
func (c *cluster) valid() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered && c.now().Before(c.validUntil)
}

// tick renews the lease, takes the expired ones and reconciles every
// subscription, while the node has consumers.
func (m *Manager) tick(ctx context.Context) {
	active := m.hasConsumers()
	m.shared.mu.Lock()
	registered := m.shared.registered
	m.shared.mu.Unlock()
	if !active && !registered {
		return
	}
	if err := m.renew(ctx, active); err != nil || !active {
		return
	}
	m.observe(ctx)
	if m.syncDefinitions() != nil {
		return
	}
	for _, sub := range m.all() {
		sub.mu.Lock()
		_ = m.reconcile(ctx, sub, "") // the next tick tries again
		sub.unlock()
	}
}

// hasConsumers reports whether a consumer is connected to this node.
func (m *Manager) hasConsumers() bool {
	for _, sub := range m.all() {
		sub.mu.Lock()
		n := len(sub.consumers)
		sub.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// all returns the subscriptions, by name.
func (m *Manager) all() []*subscription {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*subscription, 0, len(m.subs))
	for _, sub := range m.subs {
		out = append(out, sub)
	}
	slices.SortFunc(out, func(a, b *subscription) int { return strings.Compare(a.def.Name, b.def.Name) })
	return out
}

// renew puts the node's lease record again, or removes it when the node has
// no consumers (active false). If the record was taken (reaped), every
// partition of the node is dropped: a later renewal registers afresh.
func (m *Manager) renew(ctx context.Context, active bool) error {
	c := m.shared
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	if !active {
		_, err := m.store.Commit(ctx, store.Request{InReadOnly: true,
			Changes: []store.Change{{Space: spaceNodes, Key: c.node, Expect: store.AnyVersion}}})
		if err == nil {
			c.mu.Lock()
			c.registered, c.validUntil = false, time.Time{}
			c.mu.Unlock()
		}
		return err
	}
	sent := c.now()
	r := store.Request{InReadOnly: true, Changes: []store.Change{{Space: spaceNodes, Key: c.node,
		Value: mustJSON(nodeRecord{RenewedAt: sent.UTC()}), Expect: store.AnyVersion}}}
	if registered {
		r.Check = func(g *store.Group) error {
			_, found, err := g.State(spaceNodes, c.node)
			if err == nil && !found {
				err = errReaped
			}
			return err
		}
	}
	_, err := m.store.Commit(ctx, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.registered, c.validUntil = true, sent.Add(c.timeout-c.margin)
	case errors.Is(err, errReaped):
		c.registered, c.validUntil = false, time.Time{}
		c.mu.Unlock()
		m.dropAll()
		c.mu.Lock()
	}
	return err
}

// dropAll lets go of every partition the node holds, after its lease was
// taken: they are read again as they are stored.
func (m *Manager) dropAll() {
	for _, sub := range m.all() {
		sub.mu.Lock()
		for i, p := range sub.parts {
			if p.Owner != "" {
				sub.notify(p.Owner)
				p.Owner = ""
				sub.recs[i] = partitionRecord{Seq: ^uint64(0)} // read it again
			}
		}
		sub.unlock()
	}
}

// observe reads the other nodes' leases and reaps those this node saw
// unchanged for the whole lease timeout.
func (m *Manager) observe(ctx context.Context) {
	c := m.shared
	present := map[string]uint64{}
	it := m.store.States(spaceNodes, "")
	for it.Next() {
		if r := it.Record(); r.Key != c.node {
			present[r.Key] = r.Version
		}
	}
	if it.Close() != nil {
		return
	}
	// The time after the read: every version it returned was committed,
	// and so its renewal started, before it (taken before the read, a slow
	// read could date a renewal made during it too early, and reap a
	// valid lease).
	for _, node := range c.judge(present, c.now()) {
		m.reap(ctx, node, present[node])
	}
}

// judge takes in the versions of the other nodes' lease records read
// before now and returns the nodes whose lease expired: seen at the same
// version for the whole lease timeout. A version seen first is dated now;
// a node without a record is forgotten.
func (c *cluster) judge(present map[string]uint64, now time.Time) (expired []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for node, version := range present {
		if o, ok := c.seen[node]; !ok || o.version != version {
			c.seen[node] = observed{version: version, since: now}
		} else if now.Sub(o.since) >= c.timeout {
			expired = append(expired, node)
		}
	}
	for node := range c.seen {
		if _, ok := present[node]; !ok {
			delete(c.seen, node)
		}
	}
	slices.Sort(expired)
	return expired
}

// reap deletes the lease record of node, if it is still at version, and
// the records of its consumers: their partitions are free to take.
func (m *Manager) reap(ctx context.Context, node string, version uint64) {
	changes := []store.Change{{Space: spaceNodes, Key: node, Expect: version}}
	it := m.store.States(spaceConsumers, "")
	for it.Next() {
		r := it.Record()
		var cr consumerRecord
		if json.Unmarshal(r.Value, &cr) == nil && cr.Node == node {
			changes = append(changes, store.Change{Space: spaceConsumers, Key: r.Key, Expect: r.Version})
		}
	}
	if it.Close() != nil {
		return
	}
	if _, err := m.store.Commit(ctx, store.Request{InReadOnly: true, Changes: changes}); err == nil {
		m.shared.mu.Lock()
		delete(m.shared.seen, node)
		m.shared.mu.Unlock()
	}
}

// live returns the nodes whose leases this node counts as valid, itself
// included while registered.
func (c *cluster) live() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	now := c.now()
	for node, o := range c.seen {
		if now.Sub(o.since) < c.timeout {
			out[node] = true
		}
	}
	if c.registered {
		out[c.node] = true
	}
	return out
}

// registryEntry is a consumer of a subscription on some node.
type registryEntry struct {
	consumerRecord
	name    string
	version uint64
}

// registry reads the consumers of sub on every node, by name.
func (m *Manager) registry(sub *subscription) (map[string]registryEntry, error) {
	out := map[string]registryEntry{}
	prefix := sub.def.Name + "/"
	it := m.store.States(spaceConsumers, prefix)
	for it.Next() {
		r := it.Record()
		var cr consumerRecord
		if err := json.Unmarshal(r.Value, &cr); err != nil {
			it.Close()
			return nil, err
		}
		name := strings.TrimPrefix(r.Key, prefix)
		out[name] = registryEntry{consumerRecord: cr, name: name, version: r.Version}
	}
	return out, it.Close()
}

// register records the consumer c of sub as this node's; expect is the
// version the record must have (0: none, store.AnyVersion: replace any).
func (m *Manager) register(ctx context.Context, sub *subscription, c *Consumer, expect uint64) error {
	_, err := m.store.Commit(ctx, store.Request{InReadOnly: true, Changes: []store.Change{{Space: spaceConsumers,
		Key: sub.def.Name + "/" + c.Name, Value: mustJSON(consumerRecord{Node: m.shared.node, ConnectedAt: c.ConnectedAt}), Expect: expect}},
		Check: sub.checkStored})
	return err
}

// reconcile brings the partitions of sub in line with its consumers on
// every live node: its own consumers replaced on another node end, those
// whose records were reaped register again; the partitions are spread
// over all consumers (Assign, in the order they connected); the node
// releases the partitions that are no longer its consumers' and takes
// those of its consumers that no live consumer holds; the partitions of
// its consumer named replaced move even if they stay with that name (a
// new stream replaced the consumer). The caller holds sub.mu.
func (m *Manager) reconcile(ctx context.Context, sub *subscription, replaced string) error {
	if sub.deleted {
		return nil
	}
	reg, err := m.registry(sub)
	if err != nil {
		return err
	}
	m.checkRegistered(ctx, sub, reg)
	if err := m.refreshAll(sub); err != nil {
		if errors.Is(err, errPartitionGone) {
			m.gone(sub)
		}
		return err
	}
	live := m.shared.live()
	local := sub.localNames()
	owners := m.holders(sub, reg, live, local, replaced)
	next := Assign(owners, liveConsumers(reg, live))
	moved, targets := sub.moves(owners, next, local, m.shared.valid())
	if len(moved) == 0 {
		return nil
	}
	if err := m.readTaken(sub, moved); err != nil {
		return err
	}
	return m.move(ctx, sub, moved, targets)
}

// gone ends a subscription deleted on another node: its consumers end with
// ErrDeleted; syncDefinitions forgets it. The caller holds sub.mu.
func (m *Manager) gone(sub *subscription) {
	sub.deleted = true
	for _, c := range sub.consumers {
		c.end(ErrDeleted)
	}
	sub.consumers = nil
}

// syncDefinitions brings the subscriptions in line with the stored
// definitions, which other nodes create and delete: it loads the new ones
// and forgets the deleted ones (their consumers end with ErrDeleted).
func (m *Manager) syncDefinitions() error {
	stored, err := m.definitions()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, sub := range m.subs {
		st, ok := stored[name]
		sub.mu.Lock()
		if !ok || !st.created.Equal(sub.createdAt) || sub.deleted {
			m.gone(sub)
			delete(m.subs, name)
		}
		sub.unlock()
	}
	for name, st := range stored {
		if _, ok := m.subs[name]; ok {
			continue
		}
		sub, err := m.loadSubscription(st)
		if errors.Is(err, errPartitionGone) {
			continue // deleted while being read
		}
		if err != nil {
			return err
		}
		m.subs[name] = sub
	}
	return nil
}
