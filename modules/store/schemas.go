package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// Errors of schema registration and validation.
var (
	// ErrSchemaExists reports a second registration for an event type.
	ErrSchemaExists = errors.New("schema already exists")
	// ErrTooManySchemas reports a registration beyond the store's limit
	// of registered schemas (Memory.MaxSchemas).
	ErrTooManySchemas = errors.New("too many event schemas")
)

// CandidateConflictError reports an event that does not match the schema
// of its type; nothing of its write request is stored.
type CandidateConflictError struct {
	// Msg is the validator's message.
	Msg string
}

// Error describes the conflict.
func (e *CandidateConflictError) Error() string {
	return "event candidate does not match schema: " + e.Msg
}

// ExistingConflictError reports a registration refused because a stored
// event of the type does not match the schema.
type ExistingConflictError struct {
	// ID is the id of the first violating event.
	ID uint64
	// Msg is the validator's message.
	Msg string
}

// Error describes the conflict.
func (e *ExistingConflictError) Error() string {
	return fmt.Sprintf("existing events do not match schema: %d: %s", e.ID, e.Msg)
}

// SchemaWritten is a registration as the backend stores it.
type SchemaWritten struct {
	Type string
	Raw  []byte
}

// registry holds the committed schemas by event type. The writer adds to
// it after each commit that registered schemas and bumps the version, so
// that a write validated against an older version is checked again.
//
// The schemas are kept as an immutable set that add replaces (copy on
// write): readers take the current set without a lock or a copy, and
// registrations, which are few (at most the store's limit), pay for the
// copy. The schemas read back from storage are compiled on their first use
// (schema.Stored), so a start costs no compilation and only the types in
// use are held compiled; those registered here come compiled.
type registry struct {
	mu      sync.Mutex // serializes add
	set     atomic.Pointer[schemaSet]
	version atomic.Uint64
	limit   int // how many schemas may be registered; set once
}

// schemaSet is the registered schemas at one version; never changed once
// the registry published it.
type schemaSet struct {
	byType  map[string]*schema.Schema
	ordered []SchemaWritten // in registration order; shares its array with later sets
}

func newRegistry(limit int) *registry {
	r := &registry{limit: limit}
	r.set.Store(&schemaSet{byType: map[string]*schema.Schema{}})
	return r
}

func (r *registry) get(eventType string) *schema.Schema { return r.set.Load().byType[eventType] }

// full reports whether the registry takes no more schemas once pending
// others are registered.
func (r *registry) full(pending int) bool { return len(r.set.Load().byType)+pending >= r.limit }

// add registers the schemas of types, in this order; a type registered
// already keeps its schema.
func (r *registry) add(types []string, registered map[string]*schema.Schema) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.set.Load()
	next := &schemaSet{byType: make(map[string]*schema.Schema, len(old.byType)+len(types)), ordered: old.ordered}
	maps.Copy(next.byType, old.byType)
	for _, t := range types {
		if next.byType[t] == nil {
			next.byType[t] = registered[t]
			// Appends past the end of old.ordered, which no reader of old
			// looks at: only add, under mu, extends the latest set.
			next.ordered = append(next.ordered, SchemaWritten{Type: t, Raw: registered[t].Raw})
		}
	}
	r.set.Store(next)
	r.version.Add(1)
}

// ordered returns the registered schemas in registration order, and the
// same by type; both are shared and must not be changed.
func (r *registry) ordered() ([]SchemaWritten, map[string]*schema.Schema) {
	set := r.set.Load()
	return set.ordered[:len(set.ordered):len(set.ordered)], set.byType
}

// snapshot returns the registered schemas by type; the map is shared and
// must not be changed.
func (r *registry) snapshot() map[string]*schema.Schema { return r.set.Load().byType }

// describe returns the figures of the registry for diagnostics: the
// schemas registered, those of them compiled so far, and the limit.
func (r *registry) describe() map[string]any {
	set := r.set.Load()
	compiled := 0
	for _, sch := range set.byType {
		if sch.Compiled() {
			compiled++
		}
	}
	return map[string]any{"registered": len(set.byType), "compiled": compiled, "limit": r.limit}
}

// validateCandidates checks the candidates whose type has a schema and
// returns the first violation as a *CandidateConflictError.
func validateCandidates(candidates []event.Candidate, schemaOf func(string) *schema.Schema) error {
	for _, c := range candidates {
		s := schemaOf(c.Type)
		if s == nil {
			continue
		}
		if err := s.Validate(c.Data); err != nil {
			var violation *schema.ViolationError
			if errors.As(err, &violation) {
				return &CandidateConflictError{Msg: violation.Msg}
			}
			return fmt.Errorf("validate an event of %s: %w", c.Type, err)
		}
	}
	return nil
}

// registration is a schema waiting for the writer.
type registration struct {
	eventType string
	schema    *schema.Schema
	// validatedUpTo: the events below this id were checked against the
	// schema before queueing; the writer checks the rest.
	validatedUpTo uint64
}

// RegisterSchema binds s to eventType for good, once every stored event of
// the type matches it; from then on every write of the type is validated.
// It fails with ErrSchemaExists, ErrTooManySchemas, an
// *ExistingConflictError, ErrClosed or a *FailureError. The schema is
// stored in the same synced commit path as events.
func (s *Store) RegisterSchema(ctx context.Context, eventType string, sch *schema.Schema) error {
	if err := s.refusal(); err != nil {
		return err
	}
	if s.schemas.get(eventType) != nil {
		return ErrSchemaExists
	}
	// Registrations are never undone, so a full registry stays full: refuse
	// before reading the type's events. The writer decides the rest.
	if s.schemas.full(0) {
		return ErrTooManySchemas
	}
	// Check the events stored so far here, not in the writer, which then
	// only checks those written since.
	upTo := s.Durable()
	if err := s.validateStored(eventType, sch, 0, upTo); err != nil {
		return err
	}
	w := &writeRequest{register: &registration{eventType: eventType, schema: sch, validatedUpTo: upTo}, done: make(chan struct{})}
	if err := s.enqueue(ctx, w); err != nil {
		return err
	}
	<-w.done
	return w.err
}

// validateStored checks the stored events of eventType with ids from..to-1.
func (s *Store) validateStored(eventType string, sch *schema.Schema, from, to uint64) error {
	if from >= to {
		return nil
	}
	it := s.Scan(Scan{Type: eventType, From: from, To: to - 1})
	for it.Next() {
		if err := validateRecord(it.Record(), sch); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close() // once: a second Close may close an iterator Pebble has handed out again
}

// validateRecord checks a stored event's data against sch.
func validateRecord(r event.Record, sch *schema.Schema) error {
	f, err := event.Decode(r)
	if err != nil {
		return err
	}
	err = sch.Validate(f.Data)
	var violation *schema.ViolationError
	if errors.As(err, &violation) {
		return &ExistingConflictError{ID: r.ID, Msg: violation.Msg}
	}
	return err
}

// EventType describes an event type: written, registered, or both.
type EventType struct {
	Name string
	// Schema is the registered schema, nil when there is none.
	Schema *schema.Schema
	// Phantom is true when a schema is registered but no event of the type
	// exists yet.
	Phantom bool
}

// EventTypes returns the types of durable events and the types with a
// registered schema, sorted by name.
func (s *Store) EventTypes() ([]EventType, error) {
	if err := s.followSchemas(); err != nil {
		return nil, err
	}
	return s.View().EventTypes()
}

// EventType describes one event type; found is false when no event of the
// type was written and no schema is registered for it.
func (s *Store) EventType(name string) (EventType, bool, error) {
	if err := s.followSchemas(); err != nil {
		return EventType{}, false, err
	}
	it := s.Scan(Scan{Type: name, From: 0, To: math.MaxUint64})
	written := it.Next()
	if err := it.Close(); err != nil {
		return EventType{}, false, err
	}
	sch := s.schemas.get(name)
	if !written && sch == nil {
		return EventType{}, false, nil
	}
	return EventType{Name: name, Schema: sch, Phantom: !written}, true, nil
}
