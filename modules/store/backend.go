package store

import (
	"context"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Head describes the end of the committed event log.
type Head struct {
	// Count is the number of events, which is also the id of the next one.
	Count uint64
	// LastHash is the hash of event Count-1, event.ZeroHash when empty.
	LastHash string
	// LastTime is the time of event Count-1, zero when empty.
	LastTime time.Time
	// Commits counts the commits of a shared backend, so that a node learns
	// of another's commit that changed feature state without adding events.
	// A backend only this store writes may leave it 0.
	Commits uint64
	// States counts the changes of feature state ever committed (puts and
	// deletes): the version of a put is its number, so versions never repeat
	// and order the puts. Every backend keeps it; a node reads feature
	// state again only when another node moved it.
	States uint64
	// Restoring marks a head that a restore has not finished: the events
	// up to it are not visible, and a store that opens a backend whose head
	// says so empties it (the restore was cut off).
	Restoring bool
}

// Written is a sealed record with the fields the backend indexes.
type Written struct {
	Record  event.Record
	Subject string
	Type    string
	// Keyed are the keys of the data indexes that keyed the event when this
	// store's writer committed it; none for an event read back or
	// committed by another node.
	Keyed []dataindex.Keyed
	// Kept, unless nil, is the digest of the original data of an erased
	// event that a restore writes: the backend keeps it (DigestKeeper).
	Kept *event.DataSum
}

// writtenOf returns a stored record with the subject and type its index
// entries are made of, read with sc; the record's JSON is not copied.
func writtenOf(r event.Record, sc *jsonscan.Scanner) (Written, error) {
	m, err := r.Split(sc)
	if err != nil {
		return Written{}, err
	}
	w := Written{Record: r}
	if w.Subject, err = m.Text(event.MemberSubject, sc); err == nil {
		w.Type, err = m.Text(event.MemberType, sc)
	}
	return w, err
}

// splitTyped returns the members of r and its type, read with sc.
func splitTyped(r event.Record, sc *jsonscan.Scanner) (event.Members, string, error) {
	m, err := r.Split(sc)
	if err != nil {
		return m, "", err
	}
	eventType, err := m.Text(event.MemberType, sc)
	return m, eventType, err
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
	// IDs, unless empty, selects exactly these events (ascending ids, as
	// far as they are within From and To): a reader that knows which
	// events it wants reads them in one pass, nothing between them. It
	// takes no Subject, Type or SubjectPrefix.
	IDs []uint64
	// DataIndex, unless 0, selects the events that have any of DataKeys
	// in the data index of that ID (DataIndex.ID), each within its own
	// ids as well as From and To. It takes no Subject, Type, SubjectPrefix
	// or IDs.
	DataIndex uint64
	DataKeys  []dataindex.Lookup
	// From and To bound the ids, both inclusive.
	From, To uint64
	// Descending reads from To down to From.
	Descending bool
}

// KeyHolder is a Reader that knows, mostly without a read, of keys of a
// data index that hold no posting: MayHold is false only for such a key.
// A view leaves the lookups of those keys out of the scans it asks of the
// backend.
type KeyHolder interface {
	MayHold(index uint64, key dataindex.Key) (bool, error)
}

// GroupFunc takes ids of events that have subject and eventType, in
// ascending order; they are valid until it returns. Its error ends the
// walk and is returned.
//
// Groups selects by s.Subject, s.Recursive, s.From and s.To alone, and
// calls fn for each subject and type in no particular order, maybe more
// than once for one, with every selected event in exactly one call. It
// reads the indexes, not the records: a reader that needs only the
// subjects and types of many events (a count) pays for the index entries.
type GroupFunc func(subject, eventType string, ids []uint64) error

// RecordIterator walks records. Record is valid until the next call to Next;
// Close releases the iterator and returns its first error.
type RecordIterator interface {
	Next() bool
	Record() event.Record
	Close() error
}

// StateIterator walks records of feature state. Record is valid until the
// next call to Next; Close releases the iterator and returns its first error.
type StateIterator interface {
	Next() bool
	Record() StateRecord
	Close() error
}

// StringIterator walks strings (subjects, event types).
type StringIterator interface {
	Next() bool
	Value() string
	Close() error
}

// Reader reads the committed state of a backend. Every method may be
// called concurrently, and reads see only committed events.
type Reader interface {
	StateReader
	// EventTypes iterates the types of written events in byte order.
	EventTypes() StringIterator
	// Record returns the record with id, and false if there is none.
	Record(id uint64) (event.Record, bool, error)
	// Scan iterates the records selected by s in id order.
	Scan(s Scan) RecordIterator
	// Groups calls fn with the ids of the events selected by s, grouped by
	// subject and type, without reading their records (Groups).
	Groups(s Scan, fn GroupFunc) error
	// LatestID returns the highest id up to maxID of an event with exactly
	// subject and, unless eventType is "", exactly eventType.
	LatestID(subject, eventType string, maxID uint64) (uint64, bool, error)
	// Subjects iterates the subjects that have events, base and below, in
	// depth-first order with siblings sorted by segment byte order.
	Subjects(base string) StringIterator
	// SubjectSeeker finds subjects that have events, base and below, by
	// seeking: each Seek costs about the same whatever lies between two
	// positions, so a reader that skips subtrees pays for the subjects it
	// takes, not for those it skips. Close releases it.
	SubjectSeeker(base string) SubjectSeeker
}

// SubjectSeeker finds the subjects with events within a base subject in
// tree order (depth-first, siblings by segment byte order: the byte order
// of TreeKey). It is used by one goroutine.
type SubjectSeeker interface {
	// Seek returns the first subject with events within the base whose
	// tree key (TreeKey) is key or follows it in byte order, false when
	// none does. key holds no 0x00 byte.
	Seek(key string) (subject string, ok bool, err error)
	// Close releases the seeker.
	Close() error
}

// Backend is the durable storage beneath the Store: one embedded database
// that only this store writes, or a database that several stores (nodes)
// share. Only the Store's writer calls Begin.
type Backend interface {
	Reader
	// Head returns the committed head.
	Head() (Head, error)
	// Begin starts the commit of a group. From its return until the Tx
	// commits or rolls back, nothing else appends to the log: other nodes of
	// a shared backend wait. Its head may have been moved by another node
	// since this store last looked, which was at known events; a shared
	// backend may read the events from known on with the head (see
	// Tx.Followed).
	Begin(ctx context.Context, known uint64) (Tx, error)
	// Shared reports whether other nodes write the backend too: then the
	// store follows their commits, told of them by Changes.
	Shared() bool
	// Changes tells of commits made by other nodes: it receives after such a
	// commit (or may, spuriously). It is nil unless Shared.
	Changes() <-chan struct{}
	// ChangedSpaces returns the spaces of feature state that the commits
	// after the change numbered since (Head.States) changed, as far as they
	// are committed now; known is false when the backend cannot tell which
	// (the store then takes every space as changed). A space may be named
	// that no commit after since changed, never the other way round.
	ChangedSpaces(since uint64) (spaces []string, known bool, err error)
	// Reset removes every event, index entry and state record and the head: the
	// backend is empty, durably, when it returns nil. Only the writer (or
	// a restore, which pauses it) calls it.
	Reset() error
	// SizeOnDisk returns the bytes the backend occupies.
	SizeOnDisk() (int64, error)
	// Close releases the backend; committed data is durable already.
	Close() error
}

// Tx is an open commit: the right to append to the log after its head.
// Everything below the head is committed and never changes, so the writer
// reads it through the Backend, inside or outside the Tx alike.
type Tx interface {
	// Head returns the committed head the commit extends.
	Head() Head
	// Commit stores everything of b atomically and durably. Once it returns
	// nil the commit is durable. An error wrapping ErrUnavailable means that
	// nothing was stored and the store may try again; any other error
	// leaves the outcome unknown and stops the store.
	Commit(b Batch) error
	// Rollback ends a Tx that did not commit; after Commit it does nothing.
	Rollback()
	// ChangedSpaces returns the spaces of feature state that the commits up
	// to the head changed after the change numbered since (Head.States), if
	// the Tx read them when it took the lock, as Backend.ChangedSpaces does;
	// known is false when it cannot tell.
	ChangedSpaces(since uint64) (spaces []string, known bool)
	// Followed returns the events from Begin's known up to the head, if the
	// Tx read them when it took the lock (in the same round trip), else
	// nil: the store then reads them itself. Their records may be left out
	// (Record.JSON nil): the store then reads them when a reader asks.
	Followed() []Written
}

// Batch is everything one commit stores: the log grows by Records, the
// feature state changes by State, and Head describes the result.
type Batch struct {
	// Records are sealed events, their ids continuing the Tx's head.
	Records []Written
	// State are the puts (Value not nil) and deletes (Value nil) of feature
	// state, each with its version: the put's or delete's number in
	// Head.States.
	State []StateRecord
	// Head is the head after the commit.
	Head Head
	// Postings are the keys of data indexes that Records have, in id
	// order; Backfill those that a build adds to events committed
	// earlier, all below the first id an index's Postings ever hold (its
	// From), in id order per index and key. Dropped are indexes removed:
	// every posting of theirs goes, those of this batch included.
	Postings []Posting
	Backfill []Posting
	Dropped  []uint64
	// Erased are events committed earlier whose records an erasure
	// replaced, with the digests of their original data to keep, and
	// Unposted the postings of that data, which go (Eraser).
	Erased   []ErasedRecord
	Unposted []Posting
}

// StateRecord is one record of feature state: a value under a key in a
// named space, and its version. See state.go.
type StateRecord struct {
	Space   string
	Key     string
	Value   []byte
	Version uint64
}

// Opener opens the backend when the store starts.
type Opener func() (Backend, error)

// The optional parts of the contract: a backend implements those it can,
// and the store finds them by type assertion.

// Waiter is implemented by backends that can be waiting for their
// database: it does not answer, or a call waits in the middle for it to
// come back. Meanwhile the store refuses writes at once and tells of it.
type Waiter interface {
	// Waiting reports whether the backend waits for the database now.
	Waiting() bool
}

// Describer is implemented by backends that describe themselves for
// diagnostics.
type Describer interface {
	Describe() map[string]any
}

// IndexVerifiable is implemented by backends that can check their indexes.
type IndexVerifiable interface {
	// NewIndexVerifier returns the IndexVerifier of one verification.
	NewIndexVerifier() IndexVerifier
}

// DataPostingsReader is implemented by backends that keep data index
// postings (Batch.Postings): a verification reads them all.
type DataPostingsReader interface {
	// DataPostings calls fn for every posting of the data index id, in no
	// particular order, until fn fails.
	DataPostings(id uint64, fn func(key dataindex.Key, eventID uint64) error) error
}

// IndexVerifier checks the indexes of a backend during one verification.
// CheckEvent is called for every verified event, in id order from 0, from
// one goroutine; then, once every event and the head proved intact, Finish
// is called once (not when the verification stopped earlier). The verified
// events are exactly those CheckEvent was called for, ids 0 … count-1: an
// index entry of a later id that the backend holds was committed after the
// verification began (an online verification of a store being written)
// and is left alone, while an entry of an id the backend holds no event
// for is a problem. Problems are *CorruptionErrors.
type IndexVerifier interface {
	CheckEvent(id uint64, subject, eventType string) error
	Finish() error
}
