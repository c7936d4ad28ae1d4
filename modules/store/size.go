package store

import (
	"sync"
	"time"
)

// sizeMaxAge is how old a reported storage size may be.
const sizeMaxAge = 10 * time.Second

// sizeCache remembers the backend's size for up to sizeMaxAge.
type sizeCache struct {
	mu    sync.Mutex
	value int64
	at    time.Time
}

// Size returns the bytes the backend occupies, at most 10 s old.
func (s *Store) Size() (int64, error) {
	s.size.mu.Lock()
	defer s.size.mu.Unlock()
	if time.Since(s.size.at) < sizeMaxAge {
		return s.size.value, nil
	}
	if s.backend == nil {
		return 0, nil
	}
	n, err := s.backend.SizeOnDisk()
	if err != nil {
		return 0, err
	}
	s.size.value, s.size.at = n, time.Now()
	return n, nil
}

// Writable reports whether the store takes writes: started, not failed,
// not closed, and its backend reachable.
func (s *Store) Writable() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.backend != nil && !s.closed && s.failure.Load() == nil && !s.unreachableLocked()
}

// Unreachable reports whether the last attempt to reach a shared backend
// failed, or the backend is waiting for it (it does not answer, or the
// backend looks up the outcome of a commit the connection broke in); the
// store tries again with every write and every poll.
func (s *Store) Unreachable() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.unreachableLocked()
}

func (s *Store) unreachableLocked() bool {
	return s.unreachable.Load() || s.backendWaiting()
}

// backendWaiting reports whether the backend is a Waiter that waits now.
func (s *Store) backendWaiting() bool {
	w, ok := s.backend.(Waiter)
	return ok && w.Waiting()
}

// Describe returns the store's figures for diagnostics: events, head,
// writability, mode, the schemas registered and compiled, its caches, and
// what the backend tells of itself.
func (s *Store) Describe() map[string]any {
	durable := s.Durable()
	out := map[string]any{
		"events":   durable,
		"headId":   int64(durable) - 1,
		"writable": s.Writable(),
		"readOnly": s.ReadOnly(),
	}
	if size, err := s.Size(); err == nil {
		out["sizeBytes"] = size
	}
	out["schemas"] = s.schemas.describe()
	out["caches"] = map[string]any{
		"window":    s.recent.describe(),
		"latestIds": map[string]any{"limitSubjects": s.latestIDs.limit}, // set once, read by any goroutine
	}
	if d, ok := s.backend.(Describer); ok {
		out["engine"] = d.Describe()
	}
	return out
}
