package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
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

// SchemaSpace is the space of feature state that holds the registered
// schemas: a record per event type, its value the schema's JSON; their
// versions order the registrations. Backends name it only to migrate
// schemas stored before feature state existed.
const SchemaSpace = "schema"

// RegisterSchema binds s to eventType for good, once every stored event of
// the type matches it; from then on every write of the type is validated.
// It fails with ErrSchemaExists, ErrTooManySchemas, an
// *ExistingConflictError, ErrReadOnly, ErrClosed or a *FailureError. The
// schema is a record of feature state, committed like events.
func (s *Store) RegisterSchema(ctx context.Context, eventType string, sch *schema.Schema) error {
	if err := s.refusal(Request{}); err != nil {
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
	_, err := s.Commit(ctx, s.registration(eventType, sch, upTo))
	return registrationError(err)
}

// registration returns the request that registers sch for eventType, the
// stored events below validatedUpTo checked already.
func (s *Store) registration(eventType string, sch *schema.Schema, validatedUpTo uint64) Request {
	return Request{
		Changes: []Change{{Space: SchemaSpace, Key: eventType, Value: sch.Raw, Expect: 0}},
		Check:   func(g *Group) error { return s.checkRegistration(g, eventType, sch, validatedUpTo) },
		Applied: func() { s.schemas.add([]string{eventType}, map[string]*schema.Schema{eventType: sch}) },
	}
}

// registrationError returns the error of a registration: ErrSchemaExists
// for the fence of a type registered already.
func registrationError(err error) error {
	var conflict *StateConflictError
	if errors.As(err, &conflict) {
		return ErrSchemaExists
	}
	return err
}

// checkRegistration refuses a schema beyond the limit, and a schema that
// an event stored since validatedUpTo or written earlier in the group does
// not match; it lets the later writes of the group be validated against
// it. A second schema for the type its Change's fence refused already.
func (s *Store) checkRegistration(g *Group, eventType string, sch *schema.Schema, validatedUpTo uint64) error {
	// The registry holds exactly the committed schemas here: the writer
	// has followed the backend's head under its lock (on PostgreSQL the
	// other nodes' registrations with it), which no other node moves until
	// this commit ends.
	if s.schemas.full(g.Changes(SchemaSpace)) {
		return ErrTooManySchemas
	}
	if err := s.validateStored(eventType, sch, validatedUpTo, g.Committed()); err != nil {
		var conflict *ExistingConflictError
		if errors.As(err, &conflict) {
			return err
		}
		return newFailureError(err)
	}
	for _, w := range g.Written() {
		if w.Type == eventType {
			if err := ValidateRecord(w.Record, sch); err != nil {
				return err
			}
		}
	}
	g.g.registered[eventType] = sch
	return nil
}

// loadSchemas adds the stored schemas that the registry lacks to it (a
// registration never changes), uncompiled: each is compiled on its first
// use. The version moves only when it added one.
func (s *Store) loadSchemas(b Reader) error {
	types, stored, err := storedSchemas(b, func(t string) bool { return s.schemas.get(t) != nil })
	if err != nil {
		return err
	}
	if len(types) > 0 {
		s.schemas.add(types, stored)
	}
	return nil
}

// followSchemas adds, on a shared backend, the schemas that other nodes
// registered and this store has not followed yet, so that a registration
// acknowledged by any node is in every later read of event types here.
func (s *Store) followSchemas() error {
	if !s.shared {
		return nil
	}
	return s.loadSchemas(s.backend)
}

// ReadSchemas returns the schemas stored in r, by event type and
// uncompiled (schema.Stored), and their types in registration order.
func ReadSchemas(r Reader) ([]string, map[string]*schema.Schema, error) {
	return storedSchemas(r, nil)
}

// storedSchemas returns the schemas stored in b but those known reports
// (nil: none), by event type and uncompiled (schema.Stored), and their
// types in registration order.
func storedSchemas(b Reader, known func(eventType string) bool) ([]string, map[string]*schema.Schema, error) {
	var records []StateRecord
	it := b.States(SchemaSpace, "")
	for it.Next() {
		r := it.Record()
		if known == nil || !known(r.Key) {
			r.Value = bytes.Clone(r.Value)
			records = append(records, r)
		}
	}
	if err := it.Close(); err != nil {
		return nil, nil, fmt.Errorf("read schemas: %w", err)
	}
	slices.SortFunc(records, func(a, b StateRecord) int { return cmp.Compare(a.Version, b.Version) })
	types := make([]string, len(records))
	schemas := make(map[string]*schema.Schema, len(records))
	for i, r := range records {
		types[i] = r.Key
		schemas[r.Key] = schema.Stored(r.Value)
	}
	return types, schemas, nil
}

// validateStored checks the stored events of eventType with ids from..to-1.
func (s *Store) validateStored(eventType string, sch *schema.Schema, from, to uint64) error {
	if from >= to {
		return nil
	}
	it := s.Scan(Scan{Type: eventType, From: from, To: to - 1})
	for it.Next() {
		if err := ValidateRecord(it.Record(), sch); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close() // once: a second Close may close an iterator Pebble has handed out again
}

// ValidateRecord checks a stored event's data against sch: a violation is
// an *ExistingConflictError.
func ValidateRecord(r event.Record, sch *schema.Schema) error {
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
	view, err := s.Current()
	if err != nil {
		return nil, err
	}
	return view.EventTypes()
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
