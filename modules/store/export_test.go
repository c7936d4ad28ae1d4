package store

import "github.com/eventstore-service/eventstore/modules/schema"

// SetConditionRounds sets how often query preconditions are evaluated
// outside the writer; 0 makes the writer evaluate every one itself.
func SetConditionRounds(s *Store, rounds int) { s.conditionRounds = rounds }

// RegisterInOneGroup has the writer decide registrations of the schemas
// by type in one commit group, in this order, as if they had queued
// together, and returns each one's outcome.
func RegisterInOneGroup(s *Store, types []string, schemas []*schema.Schema) []error {
	s.writing.Lock() // the writer waits meanwhile, as for a restore
	defer s.writing.Unlock()
	group := make([]*writeRequest, len(types))
	for i, t := range types {
		group[i] = &writeRequest{register: &registration{eventType: t, schema: schemas[i], validatedUpTo: s.Durable()}, done: make(chan struct{})}
	}
	s.commit(group)
	errs := make([]error, len(group))
	for i, w := range group {
		errs[i] = w.err
	}
	return errs
}
