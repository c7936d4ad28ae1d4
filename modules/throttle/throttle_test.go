package throttle

import (
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	clock := time.Unix(1000, 0)
	th := New(10 * time.Second)
	th.now = func() time.Time { return clock }
	steps := []struct {
		after time.Duration
		ok    bool
		held  int
	}{
		{0, true, 0},                // the first goes through
		{time.Second, false, 0},     // held
		{time.Second, false, 0},     // held
		{9 * time.Second, true, 2},  // the interval passed: through, two held before it
		{5 * time.Second, false, 0}, // held
		{time.Minute, true, 1},
		{10 * time.Second, true, 0},
	}
	for i, s := range steps {
		clock = clock.Add(s.after)
		if ok, held := th.Allow(); ok != s.ok || held != s.held {
			t.Fatalf("step %d: %v %d, want %v %d", i, ok, held, s.ok, s.held)
		}
	}
}

func TestKeyed(t *testing.T) {
	clock := time.Unix(1000, 0)
	k := NewKeyed(10*time.Second, 2)
	k.now = func() time.Time { return clock }
	steps := []struct {
		after time.Duration
		key   string
		ok    bool
		held  int
	}{
		{0, "a", true, 0},
		{time.Second, "a", false, 0},
		{0, "b", true, 0}, // each key has its own interval
		{0, "b", false, 0},
		{0, "a", false, 0},
		{9 * time.Second, "a", true, 2},
		{0, "b", false, 0},
		{time.Second, "b", true, 2},
		{0, "c", true, 0}, // a third key: the others are forgotten
		{0, "a", true, 0},
		{0, "c", false, 0},
	}
	for i, s := range steps {
		clock = clock.Add(s.after)
		if ok, held := k.Allow(s.key); ok != s.ok || held != s.held {
			t.Fatalf("step %d (%s): %v %d, want %v %d", i, s.key, ok, held, s.ok, s.held)
		}
	}
	if len(k.keys) > 2 {
		t.Fatalf("%d keys tracked, at most 2 allowed", len(k.keys))
	}
}
