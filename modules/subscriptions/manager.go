package subscriptions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Errors of the Manager.
var (
	// ErrNotFound reports an unknown subscription.
	ErrNotFound = errors.New("subscription not found")
	// ErrExists reports a subscription of the name with another definition.
	ErrExists = errors.New("subscription exists with another definition")
	// ErrTooMany reports a creation beyond the limit of subscriptions.
	ErrTooMany = errors.New("too many subscriptions")
	// ErrReplaced ends a consumer that a newer one of its name replaced.
	ErrReplaced = errors.New("consumer replaced")
	// ErrDeleted ends the consumers of a deleted subscription.
	ErrDeleted = errors.New("subscription deleted")
)

// Manager holds the subscriptions of a store: their definitions and
// partitions, durable as the store's feature state, and their consumers,
// which live as long as their connections.
type Manager struct {
	store *store.Store
	limit int
	now   func() time.Time
	batch int // most deliveries of one Poll

	mu   sync.Mutex // guards subs and layout; held while a subscription is created or deleted
	subs map[string]*subscription
	// layout says that the store records Layout.
	layout bool
	// shared is what a node of a shared backend knows of the leases, nil
	// on a backend of one node.
	shared *cluster

	// parkedChanges counts the commits of other nodes of a shared backend
	// that changed parked records, as this node followed them (parkedOf).
	parkedChanges atomic.Uint64

	counting sync.Mutex     // guards starting counts and closing stopped
	counts   sync.WaitGroup // the lag counts under way in the background
	stopped  chan struct{}  // closed by Stop
}

// subscription is one subscription with its partitions and consumers.
type subscription struct {
	mu        sync.Mutex // held while its state changes, commit included
	def       Definition
	createdAt time.Time
	parts     []*Partition
	consumers []*Consumer // in the order they connected
	deleted   bool
	outcomes  Outcomes // since the process started
	lag       lagCount
	// parked counts the parked events on a backend of one node, kept as
	// the commits park and replay them; on a shared backend other nodes
	// do too, and it is not kept: parkedOf counts them again once a commit
	// changed parked records, as parkedChanges counts this node's (and the
	// Manager's counts the other nodes').
	parked        int
	parkedChanges atomic.Uint64
	parkedCount   atomic.Pointer[parkedCount]
	saved         []Partition // commit's copies of partitions, their slices reused
	routes        routes
	// node is this node's name on a shared backend, else "": then recs are
	// the partitions' records as this node last read or wrote them
	// (shared.go).
	node string
	recs []partitionRecord
	// reads numbers the whole reads of partitions on a shared backend, in
	// the order they began; copied[p] is the number of the read that gave
	// partition p's copy (takeRead: a read taken in later is no older).
	reads  uint64
	copied []uint64
	now    func() time.Time // the Manager's clock
	// queued are the settles of partitions another node holds that the
	// commit under way appends to their inboxes (commitSettles).
	queued map[int][]inboxEntry
	// view is what the reads see (view.go), published as the lock is let
	// go (unlock); counting says that its lag is being counted in the
	// background.
	view     atomic.Pointer[view]
	counting atomic.Bool
	// committed is closed and replaced by every commit of the
	// subscription's state on this node (announce): its consumers poll
	// again. Commits of feature state wake no one else (store.Store.Changed
	// announces commits of events only).
	committed atomic.Pointer[chan struct{}]
}

// Outcomes count what became of a subscription's deliveries.
type Outcomes struct {
	Acknowledged, Retried, TimedOut, Parked, Stale uint64
}

// Consumer is one connected consumer of a subscription.
type Consumer struct {
	Name        string
	ConnectedAt time.Time
	sub         *subscription
	ended       chan struct{} // closed when the consumer ends
	err         error         // why it ended
	changed     chan struct{} // closed and replaced when its partitions change
	woken       chan struct{} // has a value when it is to poll (Woken)
	ahead       readAhead     // records delivered to it by others' polls, not sent yet
}

// Ended returns a channel closed when the consumer was replaced, or its
// subscription deleted; Err then says which.
func (c *Consumer) Ended() <-chan struct{} { return c.ended }

// Err returns why the consumer ended: ErrReplaced or ErrDeleted.
func (c *Consumer) Err() error {
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	return c.err
}

// Woken returns a channel that has a value when the consumer is to poll
// although no commit of events announced anything (on a shared backend:
// settles made on other nodes wait to be taken in).
func (c *Consumer) Woken() <-chan struct{} { return c.woken }

// Partitions returns the partitions the consumer owns now, and a channel
// closed when they change.
func (c *Consumer) Partitions() ([]int, <-chan struct{}) {
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	var out []int
	for _, p := range c.sub.parts {
		if p.Owner == c.Name {
			out = append(out, p.Index)
		}
	}
	return out, c.changed
}

// NewManager returns the manager of the subscriptions of s, at most limit
// of them. Load reads the stored ones.
func NewManager(s *store.Store, limit int) *Manager {
	return &Manager{store: s, limit: limit, now: time.Now, batch: pollLimit, subs: map[string]*subscription{},
		stopped: make(chan struct{})}
}

// Limit returns the most subscriptions that may exist.
func (m *Manager) Limit() int { return m.limit }

// Load reads the stored subscriptions, after the store started or a
// restore into it (when there were none). Their deliveries in flight are
// sent again to the consumers that connect.
func (m *Manager) Load() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.subs) > 0 {
		return errors.New("subscriptions are loaded already")
	}
	var err error
	if m.layout, err = checkLayout(m.store); err != nil {
		return err
	}
	stored, err := m.definitions()
	if err != nil {
		return err
	}
	for name, st := range stored {
		if m.subs[name], err = m.loadSubscription(st); err != nil {
			return err
		}
		m.countInBackground(m.subs[name]) // the first lag after the start
	}
	return nil
}

// storedDefinition is a definition as stored, with its creation time.
type storedDefinition struct {
	def     Definition
	created time.Time
}

// definitions reads the stored definitions, by name.
func (m *Manager) definitions() (map[string]storedDefinition, error) {
	out := map[string]storedDefinition{}
	it := m.store.States(spaceDefinitions, "")
	for it.Next() {
		r := it.Record()
		def, created, err := decodeDefinition(r.Key, bytes.Clone(r.Value))
		if err != nil {
			it.Close()
			return nil, err
		}
		out[r.Key] = storedDefinition{def, created}
	}
	return out, it.Close()
}

// loadSubscription reads the stored partitions of st; none has an owner.
func (m *Manager) loadSubscription(st storedDefinition) (*subscription, error) {
	snaps, recs, err := loadSnapshots(m.store, st.def.Name, st.def.Options.Partitions)
	if err != nil {
		return nil, err
	}
	now := m.now()
	sub := m.newSubscription(st.def, st.created)
	sub.recs = recs
	if sub.node == "" {
		if sub.parked, err = m.countParked(st.def.Name); err != nil {
			return nil, err
		}
	}
	for p, snap := range snaps {
		part, err := Restore(p, st.def.Options, snap, now)
		if err != nil {
			return nil, fmt.Errorf("subscription %s: %w", st.def.Name, err)
		}
		sub.parts = append(sub.parts, part)
	}
	return sub, nil
}

// newSubscription returns the subscription d, created at created, without
// partitions.
func (m *Manager) newSubscription(d Definition, created time.Time) *subscription {
	sub := &subscription{def: d, createdAt: created, recs: make([]partitionRecord, d.Options.Partitions),
		copied: make([]uint64, d.Options.Partitions), now: func() time.Time { return m.now() }}
	committed := make(chan struct{})
	sub.committed.Store(&committed)
	if m.shared != nil {
		sub.node = m.shared.node
	}
	return sub
}

// Create creates the subscription d, its partitions starting at d's start
// on the log as it is now, and returns its info; the same definition again
// changes nothing. It fails with ErrExists, ErrTooMany, store.ErrReadOnly
// or the store's error.
func (m *Manager) Create(ctx context.Context, d Definition) (Info, error) {
	if err := d.Validate(); err != nil {
		return Info{}, err
	}
	for attempt := 1; ; attempt++ {
		info, err := m.create(ctx, d)
		if !errors.Is(err, errCreatedElsewhere) || attempt == 3 {
			return info, err
		}
	}
}

// create is Create once: on a shared backend another node may create the
// name at the same moment (errCreatedElsewhere), and Create looks again.
func (m *Manager) create(ctx context.Context, d Definition) (Info, error) {
	if m.shared != nil {
		if err := m.syncDefinitions(); err != nil {
			return Info{}, err
		}
	}
	m.mu.Lock()
	_, known := m.subs[d.Name]
	m.mu.Unlock()
	if !known { // records a deleted incarnation left must not join the new one
		if err := m.sweep(ctx, d.Name); err != nil {
			return Info{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if sub, ok := m.subs[d.Name]; ok {
		if !sub.def.Same(d) {
			return Info{}, ErrExists
		}
		return m.info(sub)
	}
	if len(m.subs) >= m.limit {
		return Info{}, ErrTooMany
	}
	created := m.now().UTC()
	floor := d.Options.Start.Floor(m.store.Durable())
	sub := m.newSubscription(d, created)
	changes := []store.Change{{Space: spaceDefinitions, Key: d.Name, Value: encodeDefinition(d, created), Expect: 0}}
	if !m.layout {
		changes = append(changes, layoutChange())
	}
	for p := range d.Options.Partitions {
		sub.parts = append(sub.parts, NewPartition(p, d.Options, floor))
		sub.recs[p] = partitionRecord{Floor: floor}
		changes = append(changes, store.Change{Space: spacePartitions, Key: partitionKey(d.Name, p),
			Value: mustJSON(partitionRecord{Floor: floor}), Expect: 0})
	}
	if _, err := m.store.Commit(ctx, store.Request{Changes: changes}); err != nil {
		var conflict *store.StateConflictError
		if m.shared != nil && errors.As(err, &conflict) && conflict.Space == spaceDefinitions {
			return Info{}, errCreatedElsewhere
		}
		return Info{}, err
	}
	m.layout = true
	m.subs[d.Name] = sub
	m.countInBackground(sub)
	return m.info(sub)
}

// errCreatedElsewhere refuses a creation that another node made at the
// same moment.
var errCreatedElsewhere = errors.New("the subscription was created on another node at the same moment")

// Delete removes the subscription name and its state; its consumers end
// with ErrDeleted. One commit removes its definition and partitions, at
// once for every node; the rest of its records go after it, a batch at a
// time (sweep), so that a subscription with many parked events is no
// unbounded request under the manager's lock.
func (m *Manager) Delete(ctx context.Context, name string) error {
	if err := m.deleteDefinition(ctx, name); err != nil {
		return err
	}
	// No commit of the deleted incarnation can come after it (on a shared
	// backend, checkStored), and the commits of its holders that came
	// before are swept too.
	return m.sweep(ctx, name)
}

// deleteDefinition is Delete's first commit: the definition and the
// partition records of the subscription name.
func (m *Manager) deleteDefinition(ctx context.Context, name string) error {
	if m.shared != nil { // another node may have created it
		if err := m.syncDefinitions(); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sub, ok := m.subs[name]
	if !ok {
		return ErrNotFound
	}
	sub.mu.Lock()
	defer sub.unlock()
	changes := []store.Change{{Space: spaceDefinitions, Key: name, Expect: store.AnyVersion}}
	for p := range sub.parts {
		changes = append(changes, store.Change{Space: spacePartitions, Key: partitionKey(name, p), Expect: store.AnyVersion})
	}
	r := store.Request{Changes: changes}
	if m.shared != nil { // another node may have deleted it, or created it again
		r.Check = func(g *store.Group) error {
			err := sub.checkStored(g)
			if errors.Is(err, errPartitionGone) {
				return ErrNotFound
			}
			return err
		}
	}
	if _, err := m.store.Commit(ctx, r); err != nil {
		if errors.Is(err, ErrNotFound) {
			delete(m.subs, name)
			m.gone(sub)
		}
		return err
	}
	delete(m.subs, name)
	sub.deleted = true
	for _, c := range sub.consumers {
		c.end(ErrDeleted)
	}
	sub.consumers = nil
	return nil
}

// nameSpaces are the spaces whose keys start with a subscription's name
// and a slash.
var nameSpaces = []string{spacePartitions, spaceDeliveries, spaceReplays, spaceParked, spaceConsumers}

// sweepBatch bounds the records one commit of sweep deletes.
const sweepBatch = 10_000

// deletions returns the changes that delete up to limit stored records of
// the subscription name, its definition aside.
func (m *Manager) deletions(name string, limit int) ([]store.Change, error) {
	var changes []store.Change
	for _, space := range nameSpaces {
		it := m.store.States(space, name+"/")
		for len(changes) < limit && it.Next() {
			changes = append(changes, store.Change{Space: space, Key: it.Record().Key, Expect: store.AnyVersion})
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// errDefined refuses a sweep of a name that has a definition.
var errDefined = errors.New("the subscription is defined")

// sweep deletes the records left of the subscription name while it has no
// definition, sweepBatch of them a commit: those of a deleted incarnation
// (a delete cut off by a crash left some too). A name defined meanwhile
// (created again, which swept first) is left alone.
func (m *Manager) sweep(ctx context.Context, name string) error {
	for {
		changes, err := m.deletions(name, sweepBatch)
		if err != nil || len(changes) == 0 {
			return err
		}
		_, err = m.store.Commit(ctx, store.Request{Changes: changes, Check: func(g *store.Group) error {
			_, found, err := g.State(spaceDefinitions, name)
			if err == nil && found {
				err = errDefined
			}
			return err
		}})
		if errors.Is(err, errDefined) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Reset moves every partition of the subscription name to start (a
// rebuild): epochs rise, the deliveries in flight become stale, parked
// events stay parked.
func (m *Manager) Reset(ctx context.Context, name string, start Start) (Info, error) {
	return lookingAgain(m, func() (Info, error) { return m.reset(ctx, name, start) })
}

// reset is Reset once.
func (m *Manager) reset(ctx context.Context, name string, start Start) (Info, error) {
	sub, err := m.lookup(name)
	if err != nil {
		return Info{}, err
	}
	sub.mu.Lock()
	floor := start.Floor(m.store.Durable())
	now := m.now()
	all := make([]int, len(sub.parts))
	for p := range all {
		all[p] = p
	}
	err = m.retryFenced(ctx, sub, all, func() error {
		_, err := sub.commit(ctx, m.store, store.Request{}, all, func() ([]store.Change, error) {
			var parked []store.Change
			for _, p := range sub.parts {
				for _, pk := range p.Reset(floor, now) {
					parked = append(parked, parkChange(sub.def.Name, p.Index, pk))
				}
			}
			sub.lag = lagCount{} // the cursors went back: count afresh
			return parked, nil
		})
		return err
	})
	sub.unlock()
	if err != nil {
		return Info{}, err
	}
	m.countInBackground(sub)
	return m.info(sub)
}

// lookingAgain runs fn, which looks a subscription up by its name, and on
// a shared backend runs it once more when it fails with ErrNotFound: the
// subscription known here by the name may have been deleted on another
// node, which fn found out (forgetting it), and created again since; the
// second run's lookup reads the definitions again and finds that one.
func lookingAgain[T any](m *Manager, fn func() (T, error)) (T, error) {
	out, err := fn()
	if errors.Is(err, ErrNotFound) && m.shared != nil {
		out, err = fn()
	}
	return out, err
}

// lookup returns the subscription name, or ErrNotFound. On a shared
// backend it reads the stored definitions first when it does not know the
// name, or knows it as deleted: another node may have created it.
func (m *Manager) lookup(name string) (*subscription, error) {
	m.mu.Lock()
	sub, ok := m.subs[name]
	m.mu.Unlock()
	if m.shared != nil && (!ok || sub.isDeleted()) {
		if err := m.syncDefinitions(); err != nil {
			return nil, err
		}
		m.mu.Lock()
		sub, ok = m.subs[name]
		m.mu.Unlock()
	}
	if !ok {
		return nil, ErrNotFound
	}
	return sub, nil
}

func (sub *subscription) isDeleted() bool {
	sub.mu.Lock()
	defer sub.unlock()
	return sub.deleted
}

// commit runs fn on the partitions of sub numbered parts (nil: all) and
// commits what it changed of them together with r (its events,
// preconditions and changes) and the changes fn returns; when fn or the
// commit fails, those partitions are as they were. On a shared backend the
// inboxes of the partitions are applied first (shared.go). It returns the
// records of r's events. The caller holds sub.mu.
func (sub *subscription) commit(ctx context.Context, s *store.Store, r store.Request, parts []int, fn func() ([]store.Change, error)) ([]event.Record, error) {
	return sub.commitSettles(ctx, s, r, parts, false, fn)
}

// commitSettles is commit; with inbox, the partitions another node holds
// change none of their records: fn settles their deliveries on this
// node's copies, to learn which tokens are stale, and queues the settles
// (sub.queued), which go to the holder's inbox, and the copies stay as
// stored.
func (sub *subscription) commitSettles(ctx context.Context, s *store.Store, r store.Request, parts []int, inbox bool, fn func() ([]store.Change, error)) ([]event.Record, error) {
	if parts == nil {
		for p := range sub.parts {
			parts = append(parts, p)
		}
	}
	if len(sub.saved) < len(parts) {
		sub.saved = append(sub.saved, make([]Partition, len(parts)-len(sub.saved))...)
	}
	saved := sub.saved[:len(parts)]
	for i, p := range parts {
		saved[i] = sub.parts[p].clone(saved[i])
	}
	savedLag := sub.lag.clone()
	restore := func() {
		for i, p := range parts {
			*sub.parts[p] = saved[i]
		}
		sub.lag = savedLag
		sub.saved = nil // the partitions took its slices
	}
	var remote []bool // on a shared backend: which of parts settle into their holder's inbox
	if sub.node != "" {
		remote = make([]bool, len(parts))
		now := sub.now()
		for i, p := range parts {
			remote[i] = inbox && sub.remote(p)
			sub.takeInbox(p, now)
		}
		sub.queued = map[int][]inboxEntry{}
		defer func() { sub.queued = nil }()
	}
	extra, err := fn()
	if err != nil {
		restore()
		return nil, err
	}
	r.Changes = append(r.Changes, extra...)
	var changed []bool // on a shared backend: which of parts changed, to be fenced
	if remote != nil {
		changed = make([]bool, len(parts))
	}
	for i, p := range parts {
		if remote != nil && remote[i] {
			continue
		}
		n := len(r.Changes)
		r.Changes = append(r.Changes, changes(sub.def.Name, p, &saved[i], sub.parts[p])...)
		if changed != nil {
			changed[i] = len(r.Changes) > n
		}
	}
	var next map[int]partitionRecord
	if remote != nil {
		next = sub.fenced(&r, parts, saved, changed, remote)
		own := r.Check
		r.Check = func(g *store.Group) error { // never into the records of another incarnation
			if err := sub.checkStored(g); err != nil || own == nil {
				return err
			}
			return own(g)
		}
		for i, p := range parts {
			if remote[i] { // copies of what others hold stay as stored
				*sub.parts[p] = saved[i].clone(Partition{})
			}
		}
	}
	if len(r.Changes) == 0 && len(r.Events) == 0 {
		return nil, nil
	}
	parked, err := sub.parkedAfter(s, r.Changes)
	if err != nil {
		restore()
		return nil, err
	}
	records, err := s.Commit(ctx, r)
	if err != nil {
		restore()
		return nil, err
	}
	for p, rec := range next {
		sub.recs[p] = rec
	}
	sub.parked = parked
	if sub.node != "" && slices.ContainsFunc(r.Changes, func(c store.Change) bool { return c.Space == spaceParked }) {
		sub.parkedChanges.Add(1)
	}
	sub.announce()
	return records, nil
}

// announce wakes the consumers of sub after a commit of its state: a
// poll's deliveries of the other consumers' partitions, a settle's room in
// a window, a reset's or a replay's deliveries are theirs to send.
func (sub *subscription) announce() {
	next := make(chan struct{})
	close(*sub.committed.Swap(&next))
}

// Committed returns a channel closed by the next commit of the state of
// c's subscription on this node (a poll's, a settle's, a reset's, a
// replay's, a rebalance's): take it before polling, wait on it with the
// store's Changed (the commits of events).
func (c *Consumer) Committed() <-chan struct{} { return *c.sub.committed.Load() }

// parkedAfter returns how many events of sub are parked once changes are
// committed: a replay deletes a parked record, a park puts one, which an
// event parked before, delivered again after a reset and parked again
// had already. On a shared backend it is not kept (sub.parked).
func (sub *subscription) parkedAfter(s *store.Store, changes []store.Change) (int, error) {
	n := sub.parked
	if sub.node != "" {
		return n, nil
	}
	for _, c := range changes {
		if c.Space != spaceParked {
			continue
		}
		if c.Value == nil {
			n--
			continue
		}
		if _, found, err := s.State(spaceParked, c.Key); err != nil {
			return 0, err
		} else if !found {
			n++
		}
	}
	return n, nil
}

// Info describes a subscription for reads.
type Info struct {
	Definition Definition
	CreatedAt  time.Time
	InFlight   int
	Parked     int
	// Lag is Manager.Lag, taken together with InFlight.
	Lag        uint64
	Consumers  []ConsumerInfo
	Partitions []PartitionInfo
}

// Counts are the figures of a subscription for metrics.
type Counts struct {
	Name      string
	Consumers int
	InFlight  int
	Parked    int
	Outcomes  Outcomes
}

// Counts returns the figures of every subscription, by name, without
// reading the log (the lag is Lag's).
func (m *Manager) Counts() ([]Counts, error) {
	if m.shared != nil {
		if err := m.syncDefinitions(); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	subs := make([]*subscription, 0, len(m.subs))
	for _, sub := range m.subs {
		subs = append(subs, sub)
	}
	m.mu.Unlock()
	slices.SortFunc(subs, func(a, b *subscription) int { return strings.Compare(a.def.Name, b.def.Name) })
	out := make([]Counts, 0, len(subs))
	for _, sub := range subs {
		v := sub.published()
		if v.deleted {
			continue
		}
		c := Counts{Name: sub.def.Name, Consumers: len(v.consumers), Outcomes: v.outcomes, Parked: v.parked, InFlight: v.inFlight}
		if sub.node != "" {
			var err error
			if c.Parked, err = m.parkedOf(sub); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// parkedCount is a count of a subscription's parked events on a shared
// backend, with the changes of parked records it saw (parkedOf).
type parkedCount struct {
	others, own uint64
	n           int
}

// parkedOf returns the number of parked events of sub on a shared
// backend: counted when a commit changed parked records since the last
// count (a park or a replay on this node or, as this node followed it,
// on another), else as counted then. A scrape during a drain that parks
// nothing reads no parked record.
func (m *Manager) parkedOf(sub *subscription) (int, error) {
	others, own := m.parkedChanges.Load(), sub.parkedChanges.Load()
	if c := sub.parkedCount.Load(); c != nil && c.others == others && c.own == own {
		return c.n, nil
	}
	n, err := m.countParked(sub.def.Name)
	if err != nil {
		return 0, err
	}
	sub.parkedCount.Store(&parkedCount{others: others, own: own, n: n})
	return n, nil
}

// countParked counts the parked events of the subscription name.
func (m *Manager) countParked(name string) (int, error) {
	n := 0
	it := m.store.States(spaceParked, name+"/")
	for it.Next() {
		n++
	}
	return n, it.Close()
}

// ConsumerInfo describes a connected consumer.
type ConsumerInfo struct {
	Name        string
	ConnectedAt time.Time
	Partitions  []int
}

// PartitionInfo describes a partition.
type PartitionInfo struct {
	Partition   int
	Position    uint64
	HasPosition bool
	Consumer    string
	Epoch       uint64
	InFlight    int
}

// Get returns the info of the subscription name.
func (m *Manager) Get(name string) (Info, error) {
	return lookingAgain(m, func() (Info, error) {
		sub, err := m.lookup(name)
		if err != nil {
			return Info{}, err
		}
		return m.info(sub)
	})
}

// List returns the infos of every subscription, by name.
func (m *Manager) List() ([]Info, error) {
	if m.shared != nil {
		if err := m.syncDefinitions(); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	names := make([]string, 0, len(m.subs))
	for name := range m.subs {
		names = append(names, name)
	}
	m.mu.Unlock()
	slices.Sort(names)
	var out []Info
	for _, name := range names {
		info, err := m.Get(name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// info returns the info of sub: on a backend of one node from its view
// (infoOf); on a shared one as every node stored it, which it reads
// before it takes sub's lock (readForInfo).
func (m *Manager) info(sub *subscription) (Info, error) {
	if sub.node == "" {
		return m.infoOf(sub)
	}
	if err := m.catchUpLag(sub, nil); err != nil { // the long part of the count, with pauses for the others
		return Info{}, err
	}
	// Outside the lock: the parked count, the consumers of every node and
	// the partitions they hold.
	parked, err := m.parkedOf(sub)
	if err != nil {
		return Info{}, err
	}
	reg, err := m.registry(sub)
	if err != nil {
		return Info{}, err
	}
	reads, err := m.readForInfo(sub)
	sub.mu.Lock()
	defer sub.unlock()
	if sub.deleted {
		return Info{}, ErrNotFound
	}
	if err == nil {
		err = m.takeRead(sub, reads)
	}
	if err != nil {
		return Info{}, m.missing(sub, err)
	}
	consumers := make([]ConsumerInfo, 0, len(reg))
	for name, e := range reg {
		consumers = append(consumers, ConsumerInfo{Name: name, ConnectedAt: e.ConnectedAt})
	}
	slices.SortFunc(consumers, func(a, b ConsumerInfo) int {
		if c := a.ConnectedAt.Compare(b.ConnectedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	info := Info{Definition: sub.def, CreatedAt: sub.createdAt, Parked: parked, Consumers: consumers,
		Partitions: sub.partitionInfos(m.now)}
	for _, p := range info.Partitions {
		info.InFlight += p.InFlight
	}
	assignPartitions(consumers, info.Partitions)
	// Under the same lock as the deliveries in flight: an event moves from
	// the lag into flight only with it, so no event is missing from both.
	info.Lag, err = m.lagLocked(sub)
	return info, err
}

// end ends the consumer with err; the caller holds its subscription's lock.
func (c *Consumer) end(err error) {
	if c.err == nil {
		c.err = err
		close(c.ended)
	}
}
