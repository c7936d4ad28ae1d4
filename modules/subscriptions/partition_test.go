package subscriptions

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPartitionOf(t *testing.T) {
	// FNV-1a 64 of the subjects, computed independently.
	for _, c := range []struct {
		subject string
		n, want int
	}{{"/books/42", 16, 11}, {"/books/42", 1024, 763}, {"/orders/1", 16, 3}, {"/", 1024, 510}, {"/x", 1, 0}} {
		if got := PartitionOf(c.subject, c.n); got != c.want {
			t.Errorf("PartitionOf(%q, %d) = %d, want %d", c.subject, c.n, got, c.want)
		}
	}
}

// shares counts the partitions of each consumer.
func shares(owners []string) map[string]int {
	out := map[string]int{}
	for _, o := range owners {
		out[o]++
	}
	return out
}

func checkSpread(t *testing.T, owners, consumers []string) {
	t.Helper()
	s := shares(owners)
	if len(consumers) == 0 {
		if s[""] != len(owners) {
			t.Fatalf("owners without consumers: %v", owners)
		}
		return
	}
	lo, hi := len(owners), 0
	for _, c := range consumers {
		lo, hi = min(lo, s[c]), max(hi, s[c])
	}
	if hi-lo > 1 || s[""] != 0 {
		t.Fatalf("shares %v over %v", s, consumers)
	}
}

func TestAssignSpreadsEvenlyAndMovesLittle(t *testing.T) {
	owners := make([]string, 16)
	var consumers []string
	steps := [][]string{{"a"}, {"a", "b", "c", "d"}, {"a", "c"}, {"c"}, {"c", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u"}, {}}
	for _, next := range steps {
		before := owners
		owners = Assign(owners, next)
		consumers = next
		checkSpread(t, owners, consumers)
		// A partition moves only if its owner left or holds more than its share.
		s := shares(before)
		limit := 0
		if len(consumers) > 0 {
			limit = (len(owners) + len(consumers) - 1) / len(consumers)
		}
		for p := range owners {
			if before[p] != owners[p] && slices.Contains(consumers, before[p]) && s[before[p]] <= limit {
				t.Fatalf("partition %d moved from %s (holding %d, share up to %d) to %s", p, before[p], s[before[p]], limit, owners[p])
			}
		}
	}
}

func TestAssignRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(40)
		owners := make([]string, n)
		for p := range owners {
			owners[p] = fmt.Sprint(r.IntN(6)) // some of them gone
		}
		var consumers []string
		for c := range r.IntN(8) {
			consumers = append(consumers, fmt.Sprint(c))
		}
		out := Assign(owners, consumers)
		checkSpread(t, out, consumers)
		if again := Assign(out, consumers); !slices.Equal(again, out) {
			t.Fatalf("a second assignment moved partitions: %v -> %v", out, again)
		}
	}
}
