package store

import "github.com/eventstore-service/eventstore/modules/schema"

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
