package throttle

import (
	"sync"
	"time"
)

// Throttle lets an occurrence through at most once per interval and
// counts the others. It is safe for concurrent use.
type Throttle struct {
	mu       sync.Mutex
	interval time.Duration
	last     time.Time // when an occurrence last went through
	held     int       // occurrences held back since then
	now      func() time.Time
}

// New returns a Throttle that lets the first occurrence through, and then
// one per interval.
func New(interval time.Duration) *Throttle {
	return &Throttle{interval: interval, now: time.Now}
}

// Allow reports whether this occurrence may go through, and how many were
// held back since the last one that did.
func (t *Throttle) Allow() (ok bool, held int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if !t.last.IsZero() && now.Sub(t.last) < t.interval {
		t.held++
		return false, 0
	}
	held, t.held, t.last = t.held, 0, now
	return true, held
}
