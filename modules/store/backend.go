package store

import (
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Head describes the end of the committed event log.
type Head struct {
	// Count is the number of events, which is also the id of the next one.
	Count uint64
	// LastHash is the hash of event Count-1, event.ZeroHash when empty.
	LastHash string
	// LastTime is the time of event Count-1, zero when empty.
	LastTime time.Time
}

// Written is a sealed record with the fields the backend indexes.
type Written struct {
	Record  event.Record
	Subject string
	Type    string
}

// Scan selects records of a subject, of a type, or both, within an id range.
type Scan struct {
	// Subject is the subject to read; with Recursive also its descendants
	// ("/" recursive is every event). Empty reads every subject.
	Subject   string
	Recursive bool
	// Type, unless empty, restricts the read to events of exactly this type.
	// It combines with an empty Subject or with a Subject that is not Recursive.
	Type string
	// SubjectPrefix, unless empty, selects the events whose subject starts
	// with it as a plain string ("/books/4" takes /books/42 and /books/4/x).
	// It takes no Subject and no Type.
	SubjectPrefix string
	// From and To bound the ids, both inclusive.
	From, To uint64
	// Descending reads from To down to From.
	Descending bool
}

// RecordIterator walks records. Record is valid until the next call to Next;
// Close releases the iterator and returns its first error.
type RecordIterator interface {
	Next() bool
	Record() event.Record
	Close() error
}

// StringIterator walks strings (subjects, event types).
type StringIterator interface {
	Next() bool
	Value() string
	Close() error
}

// Backend is the durable storage beneath the Store. Only the Store's writer
// calls Commit; everything else may be called concurrently.
type Backend interface {
	// Head returns the committed head.
	Head() (Head, error)
	// Commit stores the records, their index entries, the schemas registered
	// with them and the new head in one atomic, synced write. An error means
	// the outcome is unknown.
	Commit(records []Written, head Head, schemas []SchemaWritten) error
	// Schemas returns every registered schema.
	Schemas() ([]SchemaWritten, error)
	// EventTypes iterates the types of written events in byte order.
	EventTypes() StringIterator
	// Record returns the record with id, and false if there is none.
	Record(id uint64) (event.Record, bool, error)
	// Scan iterates the records selected by s in id order.
	Scan(s Scan) RecordIterator
	// LatestID returns the highest id up to maxID of an event with exactly
	// subject and, unless eventType is "", exactly eventType.
	LatestID(subject, eventType string, maxID uint64) (uint64, bool, error)
	// Subjects iterates the subjects that have events, base and below, in
	// depth-first order with siblings sorted by segment byte order.
	Subjects(base string) StringIterator
	// SizeOnDisk returns the bytes the backend occupies.
	SizeOnDisk() (int64, error)
	// Close releases the backend; committed data is durable already.
	Close() error
}

// Opener opens the backend when the store starts.
type Opener func() (Backend, error)
