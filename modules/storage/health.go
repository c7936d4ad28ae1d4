package storage

import (
	"context"

	"github.com/eventstore-service/eventstore/modules/health"
)

// Figures is what the health checks read from the store.
type Figures interface {
	Writable() bool
	Unreachable() bool
	ReadOnly() bool
	Size() (int64, error)
	Durable() uint64
}

// HealthChecks returns the storage entries of the health report:
// storage:writable, storage:size, storage:events and mode ("read-write" or
// "read-only", both passing).
func HealthChecks(s Figures) []health.Check {
	return []health.Check{
		{Key: "storage:writable", ComponentType: "datastore", Observe: func(context.Context) health.Observation {
			switch {
			case s.Writable():
				return health.Observation{Value: true, Status: health.Pass}
			case s.Unreachable():
				return health.Observation{Value: false, Status: health.Fail, Output: "storage unreachable"}
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
		{Key: "mode", ComponentType: "component", Observe: func(context.Context) health.Observation {
			if s.ReadOnly() {
				return health.Observation{Value: "read-only", Status: health.Pass}
			}
			return health.Observation{Value: "read-write", Status: health.Pass}
		}},
	}
}
