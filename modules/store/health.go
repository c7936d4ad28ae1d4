package store

import (
	"context"
	"sync"
	"time"

	"github.com/eventstore-service/eventstore/modules/health"
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

// Writable reports whether the store takes writes: started, not failed, not closed.
func (s *Store) Writable() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.backend != nil && !s.closed && s.failure.Load() == nil
}

// HealthChecks returns the store's entries of the health report:
// storage:writable, storage:size and storage:events.
func (s *Store) HealthChecks() []health.Check {
	return []health.Check{
		{Key: "storage:writable", ComponentType: "datastore", Observe: func(context.Context) health.Observation {
			if s.Writable() {
				return health.Observation{Value: true, Status: health.Pass}
			}
			return health.Observation{Value: false, Status: health.Fail, Output: "storage not writable"}
		}},
		{Key: "storage:size", ComponentType: "datastore", Observe: func(context.Context) health.Observation {
			n, err := s.Size()
			if err != nil {
				return health.Observation{Value: 0, Unit: "bytes", Status: health.Warn, Output: "size unknown: " + err.Error()}
			}
			return health.Observation{Value: n, Unit: "bytes", Status: health.Pass}
		}},
		{Key: "storage:events", ComponentType: "datastore", Observe: func(context.Context) health.Observation {
			return health.Observation{Value: s.Durable(), Status: health.Pass}
		}},
	}
}
