package subscriptions

import (
	"hash/fnv"
	"slices"
)

// PartitionOf returns the partition of the events of subject among n: the
// FNV-1a 64-bit hash of the subject's bytes, modulo n.
func PartitionOf(subject string, n int) int {
	if n == 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(subject))
	return int(h.Sum64() % uint64(n))
}

// Assign spreads len(owners) partitions over consumers, in the order they
// connected, and returns the new owner of each ("" for none). Shares differ
// by at most one; a consumer keeps the partitions it has as far as that
// allows, so that as few as possible move; owners names the current owner
// of each ("" for none, or a consumer that is gone).
func Assign(owners []string, consumers []string) []string {
	out := make([]string, len(owners))
	if len(consumers) == 0 {
		return out
	}
	held := map[string][]int{}
	for p, owner := range owners {
		if slices.Contains(consumers, owner) {
			held[owner] = append(held[owner], p)
		}
	}
	// Those holding the most get the larger shares, so that the fewest
	// partitions move; ties go by connection order.
	order := slices.Clone(consumers)
	slices.SortStableFunc(order, func(a, b string) int { return len(held[b]) - len(held[a]) })
	base, extra := len(owners)/len(consumers), len(owners)%len(consumers)
	quota := map[string]int{}
	for i, c := range order {
		quota[c] = base
		if i < extra {
			quota[c]++
		}
	}
	for _, c := range consumers {
		keep := held[c]
		if len(keep) > quota[c] {
			keep = keep[:quota[c]] // the lowest partitions stay
		}
		for _, p := range keep {
			out[p] = c
		}
		quota[c] -= len(keep)
	}
	next := 0
	for p := range out {
		if out[p] != "" {
			continue
		}
		for quota[consumers[next]] == 0 {
			next++
		}
		out[p] = consumers[next]
		quota[consumers[next]]--
	}
	return out
}
