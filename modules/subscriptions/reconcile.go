package subscriptions

import (
	"context"
	"slices"
	"strings"

	"github.com/eventstore-service/eventstore/modules/store"
)

// The steps of reconcile (cluster.go).

// checkRegistered brings the consumers of sub on this node in line with
// their records in reg: a consumer whose record is gone (reaped) registers
// again, and is entered in reg if that succeeds; one whose record names
// another node was replaced there, and ends. The caller holds sub.mu.
func (m *Manager) checkRegistered(ctx context.Context, sub *subscription, reg map[string]registryEntry) {
	kept := sub.consumers[:0:0]
	for _, c := range sub.consumers {
		e, ok := reg[c.Name]
		switch {
		case !ok:
			if err := m.register(ctx, sub, c, 0); err == nil {
				reg[c.Name] = registryEntry{consumerRecord: consumerRecord{Node: m.shared.node, ConnectedAt: c.ConnectedAt}, name: c.Name}
			}
		case e.Node != m.shared.node:
			c.end(ErrReplaced)
			continue
		}
		kept = append(kept, c)
	}
	sub.consumers = kept
}

// localNames returns the names of the consumers of sub on this node. The
// caller holds sub.mu.
func (sub *subscription) localNames() map[string]bool {
	local := map[string]bool{}
	for _, c := range sub.consumers {
		local[c.Name] = true
	}
	return local
}

// holders returns the consumer that keeps each partition of sub, "" for
// none: a partition this node holds keeps its owner if that is one of the
// local consumers and not replaced; one another live node holds keeps the
// consumer its record names, while reg has that consumer on that node.
// The caller holds sub.mu.
func (m *Manager) holders(sub *subscription, reg map[string]registryEntry, live, local map[string]bool, replaced string) []string {
	owners := make([]string, len(sub.parts))
	for i, p := range sub.parts {
		rec := sub.recs[i]
		if p.Owner != "" {
			if local[p.Owner] && p.Owner != replaced {
				owners[i] = p.Owner
			}
		} else if e, ok := reg[rec.Consumer]; ok && rec.Node != m.shared.node && e.Node == rec.Node && live[rec.Node] {
			owners[i] = rec.Consumer // held by another node; one that names this node was let go (dropAll)
		}
	}
	return owners
}

// liveConsumers returns the names of the consumers of reg on the live
// nodes, in the order they connected (by name when at the same time).
func liveConsumers(reg map[string]registryEntry, live map[string]bool) []string {
	var entries []registryEntry
	for _, e := range reg {
		if live[e.Node] {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b registryEntry) int {
		if c := a.ConnectedAt.Compare(b.ConnectedAt); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.name
	}
	return names
}

// moves returns the partitions of sub that move, given the owners they
// keep and those Assign picked (next), with their new owners (targets, ""
// for none): those this node holds whose owner is not kept or not picked,
// and, while the node's lease is valid, those nobody holds picked for a
// local consumer. A partition picked for a consumer of another node is
// released. The caller holds sub.mu.
func (sub *subscription) moves(owners, next []string, local map[string]bool, valid bool) (moved []int, targets map[int]string) {
	targets = map[int]string{}
	for i, p := range sub.parts {
		target := next[i]
		if !local[target] {
			target = ""
		}
		held := p.Owner != "" && (owners[i] != p.Owner || next[i] != p.Owner)
		if held || (p.Owner == "" && owners[i] == "" && target != "" && valid) {
			moved = append(moved, i)
			targets[i] = target
		}
	}
	return moved, targets
}

// readTaken reads again, as stored, the partitions of moved that another
// node held: taken from a node whose lease was reaped. The caller holds
// sub.mu.
func (m *Manager) readTaken(sub *subscription, moved []int) error {
	for _, i := range moved {
		if sub.remote(i) { // taken from a node whose lease was reaped: as stored
			if err := m.refresh(sub, i, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// move moves the partitions moved of sub to their targets in one commit,
// and tells the consumers that lost or gained one. The caller holds
// sub.mu.
func (m *Manager) move(ctx context.Context, sub *subscription, moved []int, targets map[int]string) error {
	touched := map[string]bool{}
	_, err := sub.commit(ctx, m.store, store.Request{InReadOnly: true}, moved, func() ([]store.Change, error) {
		for _, i := range moved {
			touched[sub.parts[i].Owner], touched[targets[i]] = true, true
			sub.parts[i].Move(targets[i])
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	for name := range touched {
		sub.notify(name)
	}
	return nil
}
