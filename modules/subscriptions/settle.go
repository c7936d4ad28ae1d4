package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Action is what a settle does with its deliveries.
type Action int

// The settles.
const (
	// Acknowledge settles the deliveries.
	Acknowledge Action = iota
	// Retry has them sent again after a delay, counting toward
	// MaxDeliveries.
	Retry
	// Park settles them without acknowledging them, and lists them as
	// parked.
	Park
	// Extend moves their acknowledge deadlines to After from now (0: the
	// subscription's acknowledge timeout), their attempts unchanged: work
	// in progress that needs longer.
	Extend
)

// ErrNotHeld refuses a write with acknowledgements one of whose
// deliveries is stale: nothing is written.
var ErrNotHeld = errors.New("delivery is no longer held")

// Settle is one settle of deliveries of a subscription.
type Settle struct {
	Subscription string
	Tokens       []Token
	Action       Action
	After        time.Duration // Retry: the delay; Extend: by how much
	Reason       string        // Park: why
	// Write, unless it has no events, is written in the same commit: both
	// or neither (write-events with acknowledge); a stale token then fails
	// the whole with ErrNotHeld.
	Write store.Request
}

// Settled is the outcome of a Settle.
type Settled struct {
	// Done counts the deliveries settled (or retried).
	Done int
	// Stale are the tokens whose delivery is not held: of another epoch,
	// or of an event settled already.
	Stale []Token
	// Records are the records of the Write's events.
	Records []event.Record
}

// Settle settles the deliveries of s.Tokens, durably before it returns.
// Without events it goes on in read-only mode. It fails with ErrNotFound,
// ErrNotHeld, the errors of store.Commit, or ctx's error.
func (m *Manager) Settle(ctx context.Context, s Settle) (Settled, error) {
	// Tokens of a subscription deleted on another node and created again
	// are stale: the second look finds the new one.
	return lookingAgain(m, func() (Settled, error) { return m.settle(ctx, s) })
}

// settle is Settle once.
func (m *Manager) settle(ctx context.Context, s Settle) (Settled, error) {
	sub, err := m.lookupTokens(s.Subscription, s.Tokens)
	if err != nil {
		return Settled{}, err
	}
	sub.mu.Lock()
	defer sub.unlock()
	if sub.deleted {
		return Settled{}, ErrNotFound
	}
	var parts []int
	seen := map[int]bool{}
	for _, t := range s.Tokens {
		if sub.names(t) && !seen[t.Partition] {
			seen[t.Partition] = true
			parts = append(parts, t.Partition)
		}
	}
	withEvents := len(s.Write.Events) > 0
	var (
		out     Settled
		records []event.Record
	)
	err = m.retryFenced(ctx, sub, parts, func() error {
		r := s.Write
		r.InReadOnly = !withEvents
		out = Settled{}
		var err error
		records, err = sub.commitSettles(ctx, m.store, r, parts, true, m.settleFunc(sub, s, &out))
		return err
	})
	if errors.Is(err, ErrNotHeld) {
		sub.outcomes.Stale += uint64(len(out.Stale))
	}
	if err != nil {
		return Settled{}, err
	}
	if out.Done > 0 {
		sub.wakeSettled(parts, s.Action == Retry, m.store.Durable())
	}
	switch s.Action {
	case Acknowledge:
		sub.outcomes.Acknowledged += uint64(out.Done)
	case Retry:
		sub.outcomes.Retried += uint64(out.Done)
	case Park:
		sub.outcomes.Parked += uint64(out.Done)
	}
	sub.outcomes.Stale += uint64(len(out.Stale))
	out.Records = records
	return out, nil
}

// wakeSettled wakes the consumers of this node that hold partitions of
// parts that a settle changed so that their next poll is not the one they
// wait for: a retry moves when a delivery is due (their timers are set
// for the due time before it), and an acknowledgement or a park may free
// room in a full window for events stored meanwhile. A log of count
// events; the caller holds sub.mu.
func (sub *subscription) wakeSettled(parts []int, retried bool, count uint64) {
	now := sub.now()
	for _, p := range parts {
		owner := sub.parts[p].Owner
		if owner == "" || sub.remote(p) {
			continue
		}
		if retried || sub.work([]int{p}, now, count) {
			sub.wake(owner)
		}
	}
}

// lookupTokens is lookup for a settle of tokens. On a shared backend a
// token of another incarnation than the subscription this node knows by
// the name may be of one that another node created since, deleting the
// one known here: the node reads the definitions again first.
func (m *Manager) lookupTokens(name string, tokens []Token) (*subscription, error) {
	sub, err := m.lookup(name)
	if err != nil || m.shared == nil {
		return sub, err
	}
	for _, t := range tokens {
		if t.Subscription == name && t.Incarnation != sub.incarnation() {
			if err := m.syncDefinitions(); err != nil {
				return nil, err
			}
			return m.lookup(name)
		}
	}
	return sub, nil
}

// retryFenced runs fn, which commits changes of the partitions parts of
// sub, and on a shared backend reads those partitions again first if
// another node changed them or holds them (a partition this node holds
// included: fn may decide from them without committing, as a settle of
// stale tokens or a replay of nothing does), and runs fn again when
// another node changed one of them in between. Between runs it waits a
// little, without sub.mu, longer each time (up to fenceWaitMax, jittered),
// so that the commits it races with leave it a turn; it gives up only
// when ctx ends. The caller holds sub.mu.
func (m *Manager) retryFenced(ctx context.Context, sub *subscription, parts []int, fn func() error) error {
	if sub.node == "" {
		return fn()
	}
	wait := time.Millisecond
	for {
		for _, p := range parts {
			if err := m.refresh(sub, p, true); err != nil {
				return m.missing(sub, err)
			}
		}
		err := fn()
		if errors.Is(err, errPartitionGone) {
			return m.missing(sub, err)
		}
		if !errors.Is(err, errFenced) {
			return err
		}
		sub.unlock()
		select {
		case <-ctx.Done():
		case <-time.After(wait/2 + rand.N(wait)):
		}
		sub.mu.Lock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if sub.deleted {
			return ErrNotFound
		}
		wait = min(2*wait, fenceWaitMax)
	}
}

// fenceWaitMax bounds the wait of retryFenced between two runs.
const fenceWaitMax = 32 * time.Millisecond

// missing turns errPartitionGone into ErrNotFound, forgetting sub: it was
// deleted on another node. The caller holds sub.mu.
func (m *Manager) missing(sub *subscription, err error) error {
	if errors.Is(err, errPartitionGone) {
		m.gone(sub)
		return ErrNotFound
	}
	return err
}

// settleFunc returns the function that settles the deliveries of s on the
// partitions of sub, counting into out, for sub.commitSettles.
func (m *Manager) settleFunc(sub *subscription, s Settle, out *Settled) func() ([]store.Change, error) {
	withEvents := len(s.Write.Events) > 0
	now := m.now()
	return func() ([]store.Change, error) {
		var extra []store.Change
		for _, t := range s.Tokens {
			if !sub.names(t) {
				out.Stale = append(out.Stale, t)
				continue
			}
			p := sub.parts[t.Partition]
			var ok bool
			switch s.Action {
			case Acknowledge:
				ok = p.Acknowledge(t)
			case Retry:
				ok = p.Retry(t, s.After, now)
			case Extend:
				ok = p.Retry(t, extension(s.After, sub.def.Options), now) // due then as on its timeout
			case Park:
				var pk Parked
				if pk, ok = p.Park(t, s.Reason, now); ok {
					extra = append(extra, parkChange(sub.def.Name, p.Index, pk))
				}
			}
			if ok {
				out.Done++
				if sub.remote(t.Partition) { // to the holder's inbox
					e := inboxEntry{Epoch: t.Epoch, EventID: t.EventID, Attempt: t.Attempt, Action: s.Action}
					switch s.Action {
					case Retry:
						e.RetryAt = now.Add(s.After).UnixNano()
					case Extend:
						e.RetryAt = now.Add(extension(s.After, sub.def.Options)).UnixNano()
					}
					sub.queued[t.Partition] = append(sub.queued[t.Partition], e)
				}
			} else {
				out.Stale = append(out.Stale, t)
			}
		}
		if withEvents && len(out.Stale) > 0 {
			return nil, ErrNotHeld
		}
		return extra, nil
	}
}

// extension is how much an Extend of by moves a deadline in a
// subscription of opts: by, or the acknowledge timeout.
func extension(by time.Duration, opts Options) time.Duration {
	if by <= 0 {
		return opts.AcknowledgeTimeout
	}
	return by
}

// ParkedEvent is a parked event of a subscription.
type ParkedEvent struct {
	EventID   uint64
	Partition int
	Attempts  int
	At        time.Time
	Reason    string
}

// Parked returns the parked events of the subscription name in id order.
func (m *Manager) Parked(name string) ([]ParkedEvent, error) {
	if _, err := m.lookup(name); err != nil {
		return nil, err
	}
	var out []ParkedEvent
	it := m.store.States(spaceParked, name+"/")
	for it.Next() {
		r := it.Record()
		id, err := strconv.ParseUint(strings.TrimPrefix(r.Key, name+"/"), 10, 64)
		var pr parkedRecord
		if err == nil {
			err = json.Unmarshal(r.Value, &pr)
		}
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("subscription %s: parked record %q: %w", name, r.Key, err)
		}
		out = append(out, ParkedEvent{EventID: id, Partition: pr.Partition, Attempts: pr.Attempts, At: pr.At, Reason: pr.Reason})
	}
	return out, it.Close()
}

// Replay has the parked events ids of the subscription name (nil: all)
// delivered once more, attempt 1, to their partitions' owners ahead of new
// events; they are parked no more. It returns how many it took: an id that
// is not parked, or is in flight again after a reset, is left alone.
// Replaying goes on in read-only mode. It commits replayBatch events at a
// time; on an error it returns how many the commits before it took.
func (m *Manager) Replay(ctx context.Context, name string, ids []uint64) (int, error) {
	return lookingAgain(m, func() (int, error) { return m.replayParked(ctx, name, ids) })
}

// replayParked is Replay once.
func (m *Manager) replayParked(ctx context.Context, name string, ids []uint64) (int, error) {
	sub, err := m.lookup(name)
	if err != nil {
		return 0, err
	}
	parked, err := m.Parked(name)
	if err != nil {
		return 0, err
	}
	var wanted map[uint64]bool // nil: all
	if ids != nil {
		wanted = make(map[uint64]bool, len(ids))
		for _, id := range ids {
			wanted[id] = true
		}
	}
	chosen := parked[:0]
	for _, pk := range parked {
		if wanted == nil || wanted[pk.EventID] {
			chosen = append(chosen, pk)
		}
	}
	n := 0
	for len(chosen) > 0 {
		batch := chosen[:min(len(chosen), replayBatch)]
		chosen = chosen[len(batch):]
		replayed, err := m.replay(ctx, sub, batch)
		n += replayed
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// replayBatch bounds the parked events one commit of Replay takes.
const replayBatch = 10_000

// replay has the parked events of batch, of sub, delivered once more, in
// one commit, and returns how many it took.
func (m *Manager) replay(ctx context.Context, sub *subscription, batch []ParkedEvent) (int, error) {
	sub.mu.Lock()
	defer sub.unlock()
	if sub.deleted {
		return 0, ErrNotFound
	}
	var parts []int
	seen := map[int]bool{}
	for _, pk := range batch {
		if pk.Partition < len(sub.parts) && !seen[pk.Partition] {
			seen[pk.Partition] = true
			parts = append(parts, pk.Partition)
		}
	}
	n := 0
	now := m.now()
	err := m.retryFenced(ctx, sub, parts, func() error {
		n = 0
		_, err := sub.commit(ctx, m.store, store.Request{InReadOnly: true}, parts, func() ([]store.Change, error) {
			var unpark []store.Change
			for _, pk := range batch {
				if pk.Partition < len(sub.parts) && sub.parts[pk.Partition].Replay(pk.EventID, now) {
					n++
					unpark = append(unpark, store.Change{Space: spaceParked, Key: parkedKey(sub.def.Name, pk.EventID), Expect: store.AnyVersion})
				}
			}
			return unpark, nil
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
