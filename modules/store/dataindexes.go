package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
)

// Data indexes (docs/api.md §4.15) are feature state: a record per index
// in DataIndexSpace. The writer keys every event of an index's types from
// the index's From on, in the commit of the event (Batch.Postings); a
// build keys the events below From in the background, a chunk a commit,
// its progress (Next) committed with each chunk (dataindexbuild.go). An
// index is ready, and may serve reads, once Next reached From.

// DataIndexSpace is the space of feature state that holds the data
// indexes: a record per index name, its value the JSON of a DataIndex.
const DataIndexSpace = "dataindex"

// DefaultMaxDataIndexes is how many data indexes a store takes by default.
const DefaultMaxDataIndexes = 64

// Errors of data index registration and removal.
var (
	// ErrDataIndexExists refuses a registration under the name of another
	// index.
	ErrDataIndexExists = errors.New("data index already exists")
	// ErrDataIndexNotFound reports an unknown index name.
	ErrDataIndexNotFound = errors.New("data index not found")
	// ErrTooManyDataIndexes refuses a registration beyond the limit
	// (Memory.MaxDataIndexes).
	ErrTooManyDataIndexes = errors.New("too many data indexes")
)

// DataIndex is a registered data index as the store keeps it.
type DataIndex struct {
	dataindex.Definition
	// ID names the index's postings. It is drawn at random at
	// registration, so that an index registered under the name of a
	// removed one never meets postings left of it.
	ID uint64 `json:"id"`
	// From is the first event the writer keys: the build keys those below.
	From uint64 `json:"from"`
	// Next is where the build goes on: it keyed every event below it.
	Next uint64 `json:"next"`
	// CreatedAt is when the index was registered.
	CreatedAt time.Time `json:"createdAt"`

	tokens []string // of Path
	// removed is set, on a store of its own backend, by the removal of the
	// index before its commit; the copies of the index share it.
	removed *atomic.Bool
}

// Ready reports whether the index keys every event of its types: the
// build is done.
func (x *DataIndex) Ready() bool { return x.Next >= x.From }

// IndexedEvents returns how many of the first events of a store the index
// has keyed (those of other types count as keyed): all once it is ready;
// while it builds, those below Next and those from From on.
func (x *DataIndex) IndexedEvents(events uint64) uint64 {
	if x.Ready() {
		return events
	}
	return events - min(events, x.From-x.Next)
}

// Posting is a key of a data index that an event has (dataindex.Keys).
type Posting struct {
	Index uint64
	Key   dataindex.Key
	ID    uint64
}

// DataKeysRecorder is implemented by a Recorder that counts the keys of
// data indexes the writer commits, by index name.
type DataKeysRecorder interface {
	DataKeysWritten(index string, keys int)
}

// recordKeys reports the keys of a committed group to the recorder, if it
// counts them.
func (s *Store) recordKeys(g *groupState) {
	rec, ok := s.rec.(DataKeysRecorder)
	if !ok || len(g.postings)+len(g.backfill) == 0 {
		return
	}
	counts := map[uint64]int{}
	for _, postings := range [][]Posting{g.postings, g.backfill} {
		for _, p := range postings {
			counts[p.Index]++
		}
	}
	known := append(slices.Clone(g.indexes), s.dataIndexes.current().sorted...)
	for id, n := range counts {
		if i := slices.IndexFunc(known, func(x *DataIndex) bool { return x.ID == id }); i >= 0 {
			rec.DataKeysWritten(known[i].Name, n)
		}
	}
}

// appendPostings appends the postings that the event id of eventType with
// data gives x (none for a type it does not cover); keys is scratch.
func appendPostings(dst []Posting, x *DataIndex, id uint64, eventType string, data []byte, keys []dataindex.Key) ([]Posting, []dataindex.Key) {
	keys = x.Keys(keys[:0], eventType, data)
	for _, k := range keys {
		dst = append(dst, Posting{Index: x.ID, Key: k, ID: id})
	}
	return dst, keys
}

// dataIndexes holds the committed data indexes as an immutable set that
// every change replaces (copy on write): the writer and readers take it
// without a lock.
type dataIndexes struct {
	mu    sync.Mutex // serializes changes
	set   atomic.Pointer[indexSet]
	limit int
}

// indexSet is the data indexes at one moment, by name; never changed once
// published.
type indexSet struct {
	byName map[string]*DataIndex
	sorted []*DataIndex // by name
}

func newDataIndexes(limit int) *dataIndexes {
	d := &dataIndexes{limit: limit}
	d.set.Store(&indexSet{byName: map[string]*DataIndex{}})
	return d
}

func (d *dataIndexes) current() *indexSet { return d.set.Load() }

// replace publishes the set with the indexes of put replaced or added and
// those named in removed taken out.
func (d *dataIndexes) replace(put []*DataIndex, removed []string) { d.replaceIf(0, put, removed) }

// replaceIf is replace where the index of the name of put or removed is
// still the one of id (any, or none, when id is 0): what a read of an
// index known as id decided must not undo a registration made since.
func (d *dataIndexes) replaceIf(id uint64, put []*DataIndex, removed []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	byName := maps.Clone(d.set.Load().byName)
	ours := func(name string) bool { old := byName[name]; return id == 0 || old != nil && old.ID == id }
	for _, x := range put {
		if ours(x.Name) {
			byName[x.Name] = x
		}
	}
	for _, name := range removed {
		if ours(name) {
			delete(byName, name)
		}
	}
	d.publish(byName)
}

// publish makes byName the current set; the caller holds mu.
func (d *dataIndexes) publish(byName map[string]*DataIndex) {
	sorted := slices.SortedFunc(maps.Values(byName), func(a, b *DataIndex) int { return strings.Compare(a.Name, b.Name) })
	d.set.Store(&indexSet{byName: byName, sorted: sorted})
}

// decodeDataIndex returns the index a record of DataIndexSpace holds.
func decodeDataIndex(r StateRecord) (*DataIndex, error) {
	x := &DataIndex{}
	if err := json.Unmarshal(r.Value, x); err != nil {
		return nil, fmt.Errorf("data index %s: %w", r.Key, err)
	}
	tokens, err := dataindex.Tokens(x.Path)
	if err != nil {
		return nil, fmt.Errorf("data index %s: %w", r.Key, err)
	}
	x.tokens, x.removed = tokens, new(atomic.Bool)
	return x, nil
}

// ReadDataIndexes returns the data indexes stored in r, by name.
func ReadDataIndexes(r Reader) ([]*DataIndex, error) {
	var out []*DataIndex
	it := r.States(DataIndexSpace, "")
	for it.Next() {
		x, err := decodeDataIndex(it.Record())
		if err != nil {
			it.Close()
			return nil, err
		}
		out = append(out, x)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("read data indexes: %w", err)
	}
	return out, nil
}

// NewDataIndex returns a new index of d, created at now, with an id of its
// own; From and Next are the registrant's to set. It fails if d's path is
// not a valid one.
func NewDataIndex(d dataindex.Definition, now time.Time) (*DataIndex, error) {
	tokens, err := dataindex.Tokens(d.Path)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("data index %s: draw its id: %w", d.Name, err)
	}
	return &DataIndex{Definition: d, ID: binary.BigEndian.Uint64(id[:]) | 1, CreatedAt: now.UTC(), tokens: tokens, removed: new(atomic.Bool)}, nil // never 0, no index
}

// StateRecord returns the record of x in DataIndexSpace, its version
// unset.
func (x *DataIndex) StateRecord() (StateRecord, error) {
	value, err := json.Marshal(x)
	if err != nil {
		return StateRecord{}, fmt.Errorf("data index %s: %w", x.Name, err)
	}
	return StateRecord{Space: DataIndexSpace, Key: x.Name, Value: value}, nil
}

// DataIndexLimit returns how many data indexes may be registered
// (Memory.MaxDataIndexes).
func (s *Store) DataIndexLimit() int { return s.dataIndexes.limit }

// Keyed reports whether x keys event id: the writer keys those from From
// on, the build those below Next.
func (x *DataIndex) Keyed(id uint64) bool { return id >= x.From || id < x.Next }

// Keys appends to dst the keys of x that an event of eventType with data
// has (none for another type).
func (x *DataIndex) Keys(dst []dataindex.Key, eventType string, data []byte) []dataindex.Key {
	if !x.Covers(eventType) {
		return dst
	}
	return dataindex.Keys(dst, data, x.tokens)
}

// loadDataIndexes reads the data indexes stored in b into the set.
func (s *Store) loadDataIndexes(b Reader) error {
	all, err := ReadDataIndexes(b)
	if err != nil {
		return err
	}
	byName := make(map[string]*DataIndex, len(all))
	for _, x := range all {
		byName[x.Name] = x
	}
	s.dataIndexes.mu.Lock()
	defer s.dataIndexes.mu.Unlock()
	s.dataIndexes.publish(byName)
	s.kickBuild()
	return nil
}

// DataIndexes returns the registered data indexes by name, and the
// number of durable events. On a shared backend it reads them as stored
// now, and the count includes every event any node acknowledged before the
// call (as Current), so a node that has not followed a restore yet does
// not report its indexes over none of its events; the writer's own set
// changes only as the writer commits and follows the other nodes, never by
// a read, which may be older than a commit it races with.
func (s *Store) DataIndexes() ([]*DataIndex, uint64, error) {
	if !s.shared {
		return s.dataIndexes.current().sorted, s.Durable(), nil
	}
	events, err := s.visible(math.MaxUint64)
	if err != nil {
		return nil, 0, err
	}
	all, err := ReadDataIndexes(s.backend)
	return all, events, err
}

// DataIndexNamed returns the data index name, or ErrDataIndexNotFound.
func (s *Store) DataIndexNamed(name string) (*DataIndex, error) {
	all, _, err := s.DataIndexes()
	if err != nil {
		return nil, err
	}
	for _, x := range all {
		if x.Name == name {
			return x, nil
		}
	}
	return nil, ErrDataIndexNotFound
}

// RegisterDataIndex registers the data index d (validated) and returns it;
// a registration of an index that exists with the same definition returns
// that one. The events written from its commit on are keyed as they are
// written; those before are keyed by a build in the background, and the
// index serves reads once that is done (Ready). It fails with
// ErrDataIndexExists, ErrTooManyDataIndexes, ErrReadOnly, ErrClosed or a
// *FailureError.
func (s *Store) RegisterDataIndex(ctx context.Context, d dataindex.Definition) (*DataIndex, error) {
	return s.registerDataIndex(ctx, d, false)
}

// registerDataIndex is RegisterDataIndex; again tells that it runs after
// a registration of the name at the same moment.
func (s *Store) registerDataIndex(ctx context.Context, d dataindex.Definition, again bool) (*DataIndex, error) {
	if err := s.refusal(Request{}); err != nil {
		return nil, err
	}
	x, err := NewDataIndex(d, s.now())
	if err != nil {
		return nil, err
	}
	if old, err := s.DataIndexNamed(d.Name); err == nil {
		if !old.Same(d) {
			return nil, ErrDataIndexExists
		}
		return old, nil
	}
	changes := []Change{{Space: DataIndexSpace, Key: d.Name, Expect: 0}}
	_, err = s.Commit(ctx, Request{
		Changes: changes,
		Check: func(g *Group) error {
			if len(g.g.indexes) >= s.dataIndexes.limit {
				return ErrTooManyDataIndexes
			}
			// The events sealed after this request, in this group and
			// after it, are the writer's to key; those before, the build's.
			x.From = g.Committed() + uint64(len(g.Written()))
			x.Next = 0
			r, err := x.StateRecord()
			if err != nil {
				return newFailureError(err)
			}
			changes[0].Value = r.Value
			g.g.indexes = append(slices.Clip(g.g.indexes), x)
			return nil
		},
		Applied: func() {
			s.dataIndexes.replace([]*DataIndex{x}, nil)
			s.kickBuild()
		},
	})
	var conflict *StateConflictError
	if errors.As(err, &conflict) && !again { // another node registered the name at the same moment
		return s.registerDataIndex(ctx, d, true)
	}
	if err != nil {
		return nil, err
	}
	return x, nil
}

// RemoveDataIndex removes the data index name and its postings. It fails
// with ErrDataIndexNotFound, ErrReadOnly, ErrClosed or a *FailureError.
func (s *Store) RemoveDataIndex(ctx context.Context, name string) error {
	if err := s.refusal(Request{}); err != nil {
		return err
	}
	if _, err := s.DataIndexNamed(name); err != nil {
		return err
	}
	_, err := s.Commit(ctx, Request{
		Changes: []Change{{Space: DataIndexSpace, Key: name, Expect: AnyVersion}},
		Check: func(g *Group) error {
			r, found, err := g.State(DataIndexSpace, name)
			if err != nil {
				return err
			}
			if !found {
				return ErrDataIndexNotFound
			}
			stored, err := decodeDataIndex(r)
			if err != nil {
				return newFailureError(err)
			}
			if cur := s.dataIndexes.current().byName[name]; !s.shared && cur != nil && cur.ID == stored.ID {
				cur.removed.Store(true) // before the keys go: a read of them fails from here on
			}
			g.g.dropped = append(g.g.dropped, stored.ID)
			g.g.indexes = slices.DeleteFunc(slices.Clone(g.g.indexes), func(x *DataIndex) bool { return x.ID == stored.ID })
			return nil
		},
		Applied: func() { s.dataIndexes.replace(nil, []string{name}) },
	})
	return err
}
