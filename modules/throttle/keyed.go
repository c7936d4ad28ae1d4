package throttle

import (
	"sync"
	"time"
)

// Keyed is a Throttle per key, for a line that repeats in several kinds:
// each kind goes through once per interval. It tracks at most maxKeys keys;
// beyond, it forgets them all, which costs at most one more line for each
// kind repeating then. It is safe for concurrent use.
type Keyed struct {
	mu       sync.Mutex
	interval time.Duration
	maxKeys  int
	keys     map[string]*Throttle
	now      func() time.Time
}

// NewKeyed returns a Keyed that lets the first occurrence of each key
// through, and then one per interval, tracking at most maxKeys keys.
func NewKeyed(interval time.Duration, maxKeys int) *Keyed {
	return &Keyed{interval: interval, maxKeys: maxKeys, keys: map[string]*Throttle{}, now: time.Now}
}

// Allow reports whether this occurrence of key may go through, and how
// many of key were held back since the last one that did.
func (k *Keyed) Allow(key string) (ok bool, held int) {
	k.mu.Lock()
	t := k.keys[key]
	if t == nil {
		if len(k.keys) >= k.maxKeys {
			clear(k.keys)
		}
		t = &Throttle{interval: k.interval, now: k.now}
		k.keys[key] = t
	}
	k.mu.Unlock()
	return t.Allow()
}
