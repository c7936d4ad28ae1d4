package subscriptions

import "time"

// view is what the reads of a subscription on a backend of one node see
// (info, Counts, Lag): a copy of its figures as the last change under its
// lock left them (publish), so that a read never waits for the lock, which
// a commit holds until it is durable.
type view struct {
	deleted    bool
	consumers  []ConsumerInfo // in the order they connected
	partitions []PartitionInfo
	inFlight   int
	parked     int
	outcomes   Outcomes
	lag        lagCount // as counted up to lag.to, at cursors
	cursors    []uint64
}

// unlock publishes sub's view and lets go of its lock: every change under
// the lock ends with it.
func (sub *subscription) unlock() {
	sub.publish()
	sub.mu.Unlock()
}

// publish stores the view of sub as it is now. The caller holds sub.mu.
func (sub *subscription) publish() {
	v := &view{deleted: sub.deleted, parked: sub.parked, outcomes: sub.outcomes, lag: sub.lag.clone(),
		consumers: make([]ConsumerInfo, 0, len(sub.consumers)), cursors: make([]uint64, len(sub.parts))}
	for _, c := range sub.consumers {
		v.consumers = append(v.consumers, ConsumerInfo{Name: c.Name, ConnectedAt: c.ConnectedAt})
	}
	v.partitions = sub.partitionInfos(sub.now)
	for i, p := range sub.parts {
		v.inFlight += v.partitions[i].InFlight
		v.cursors[i] = p.Cursor()
	}
	sub.view.Store(v)
}

// published returns sub's view, publishing it first if no change has yet.
func (sub *subscription) published() *view {
	if v := sub.view.Load(); v != nil {
		return v
	}
	sub.mu.Lock()
	sub.unlock() // publishes it
	return sub.view.Load()
}

// partitionInfos describes sub's partitions as they are now, the settles
// that wait in their inboxes for their holder (shared.go) applied as of
// now. The caller holds sub.mu.
func (sub *subscription) partitionInfos(now func() time.Time) []PartitionInfo {
	out := make([]PartitionInfo, 0, len(sub.parts))
	for i, p := range sub.parts {
		if inbox := sub.recs[i].Inbox; len(inbox) > 0 { // settled, not yet taken in by the holder
			c := p.clone(Partition{})
			applyInbox(&c, sub.def.Name, inbox, now())
			p = &c
		}
		pos, ok := p.Position()
		owner := p.Owner
		if owner == "" && sub.recs[i].Node != "" {
			owner = sub.recs[i].Consumer // held by another node
		}
		out = append(out, PartitionInfo{Partition: p.Index, Position: pos, HasPosition: ok,
			Consumer: owner, Epoch: p.Epoch, InFlight: len(p.inFlight) + len(p.replays)})
	}
	return out
}

// infoOf returns the info of sub, on a backend of one node, from its view:
// without its lock, reading no more of the log than the events written
// since its lag was last counted (lagOf).
func (m *Manager) infoOf(sub *subscription) (Info, error) {
	v, lag, err := m.lagOf(sub)
	if err != nil {
		return Info{}, err
	}
	info := Info{Definition: sub.def, CreatedAt: sub.createdAt, InFlight: v.inFlight, Parked: v.parked, Lag: lag,
		Partitions: v.partitions, Consumers: make([]ConsumerInfo, len(v.consumers))}
	copy(info.Consumers, v.consumers)
	assignPartitions(info.Consumers, v.partitions)
	return info, nil
}

// assignPartitions lists in each of consumers the partitions it holds.
func assignPartitions(consumers []ConsumerInfo, partitions []PartitionInfo) {
	for j := range consumers {
		for _, p := range partitions {
			if p.Consumer == consumers[j].Name {
				consumers[j].Partitions = append(consumers[j].Partitions, p.Partition)
			}
		}
	}
}

// privateLag bounds the events a read counts on its own copy of the lag
// (lagOf); beyond it, the count is brought up to the head (catchUpLag),
// and past backgroundLag a read has that done in the background, so that
// the next reads count few.
const (
	privateLag    = lagChunk
	backgroundLag = 1024
)

// lagOf returns sub's view and its lag at the view's cursors: the lag as
// the view counted it, followed to the cursors and extended over the
// events written since, on a copy. When the view's count is gone (a start
// or a reset) or far behind the head, it is brought up to the head first
// (catchUpLag).
func (m *Manager) lagOf(sub *subscription) (*view, uint64, error) {
	for {
		v := sub.published()
		if v.deleted {
			return nil, 0, ErrNotFound
		}
		head := m.store.View()
		if behind := head.Count() - min(head.Count(), v.lag.to); v.lag.ahead != nil && behind <= privateLag {
			c := v.lag.clone()
			lag, err := c.count(sub, head, v.cursors, privateLag)
			if err != nil {
				return nil, 0, err
			}
			if c.to >= head.Count() { // else the cursors went back: count afresh
				if behind >= backgroundLag {
					m.countInBackground(sub)
				}
				return v, lag, nil
			}
		}
		if err := m.catchUpLag(sub, nil); err != nil {
			return nil, 0, err
		}
	}
}

// countInBackground brings sub's lag count up to the head in the
// background (catchUpLag), unless that is under way already, until the
// manager stops (Stop).
func (m *Manager) countInBackground(sub *subscription) {
	m.counting.Lock()
	defer m.counting.Unlock()
	select {
	case <-m.stopped:
		return
	default:
	}
	if !sub.counting.CompareAndSwap(false, true) {
		return
	}
	m.counts.Add(1)
	go func() {
		defer m.counts.Done()
		defer sub.counting.Store(false)
		_ = m.catchUpLag(sub, m.stopped) // a failure shows in the reads
	}()
}

// stopCounting ends the counts countInBackground started and waits for
// them.
func (m *Manager) stopCounting() {
	m.counting.Lock()
	select {
	case <-m.stopped:
	default:
		close(m.stopped)
	}
	m.counting.Unlock()
	m.counts.Wait()
}
