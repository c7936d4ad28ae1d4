package store

import (
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// RegisterInOneGroup has the writer decide registrations of the schemas
// by type in one commit group, in this order, as if they had queued
// together, and returns each one's outcome.
func RegisterInOneGroup(s *Store, types []string, schemas []*schema.Schema) []error {
	s.writing.Lock() // the writer waits meanwhile, as for a restore
	defer s.writing.Unlock()
	group := make([]*writeRequest, len(types))
	for i, t := range types {
		group[i] = &writeRequest{Request: s.registration(t, schemas[i], s.Durable()), done: make(chan struct{})}
	}
	s.commit(group)
	errs := make([]error, len(group))
	for i, w := range group {
		errs[i] = registrationError(w.err)
	}
	return errs
}

// StillToErase returns those of the events ids, read now as an erasure
// reads them before it is queued, that the writer would still erase after
// the erasures committed since (dropErasedSince).
func StillToErase(s *Store, read []event.Record) ([]uint64, error) {
	x := &erasing{pre: read, preTypes: make([]string, len(read))}
	if err := x.dropErasedSince(s.backend, s.Durable()); err != nil {
		return nil, err
	}
	ids := make([]uint64, len(x.pre))
	for i, r := range x.pre {
		ids[i] = r.ID
	}
	return ids, nil
}
