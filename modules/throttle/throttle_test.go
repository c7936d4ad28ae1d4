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
