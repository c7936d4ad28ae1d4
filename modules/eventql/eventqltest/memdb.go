package eventqltest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// MemDB is an eventql.Database over events held in memory. Event i gets
// id i and the time 2025-01-01T00:00:00.000000001Z plus i seconds.
type MemDB struct {
	// Records are the events in id order.
	Records []event.Record
	// Loaded counts the events handed out by Events.
	Loaded int
	// Indexes are the data indexes the database offers (DataIndexes);
	// an event has a key of one if dataindex.Keys gives it one, as the
	// store's do.
	Indexes []eventql.DataIndex

	subjects []string
	types    []string
	data     [][]byte // canonical
	emitter  *event.Emitter
}

// NewMemDB returns a database holding candidates.
func NewMemDB(candidates []Candidate) (*MemDB, error) {
	db := &MemDB{emitter: event.NewEmitter(nil)}
	for _, c := range candidates {
		if err := db.Add(c); err != nil {
			return nil, err
		}
	}
	return db, nil
}

// Library returns a database holding the conformance data set.
func Library(t testing.TB) *MemDB {
	t.Helper()
	db, err := NewMemDB(Load(t).Dataset.Events)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// Add appends an event.
func (db *MemDB) Add(c Candidate) error {
	data, err := jsonscan.Canonicalize(c.Data)
	if err != nil {
		return fmt.Errorf("canonicalize %s: %w", c.Data, err)
	}
	prev := []byte(event.ZeroHash)
	if n := len(db.Records); n > 0 {
		prev = db.Records[n-1].HashBytes()
	}
	id := uint64(len(db.Records))
	when := time.Date(2025, 1, 1, 0, 0, 0, 1, time.UTC).Add(time.Duration(id) * time.Second)
	_, rec := event.Seal(nil, event.Candidate{Source: c.Source, Subject: c.Subject, Type: c.Type, Data: data}, id, when, prev)
	db.Records = append(db.Records, rec)
	db.subjects = append(db.subjects, c.Subject)
	db.data = append(db.data, data)
	db.types = append(db.types, c.Type)
	return nil
}

func (db *MemDB) matches(i int, sel eventql.Selection) bool {
	if sel.DataIndex != 0 {
		return db.hasKey(i, sel)
	}
	if len(sel.Lookups) == 0 {
		return true
	}
	for _, l := range sel.Lookups {
		if (l.Type == "" || l.Type == db.types[i]) && (l.Subject == "" || l.Subject == db.subjects[i]) &&
			strings.HasPrefix(db.subjects[i], l.SubjectPrefix) {
			return true
		}
	}
	return false
}

// Events calls fn for the selected events.
func (db *MemDB) Events(ctx context.Context, sel eventql.Selection, fn func(event.Record) bool) error {
	n := len(db.Records)
	for k := 0; k < n; k++ {
		i := k
		if sel.Descending {
			i = n - 1 - k
		}
		if uint64(i) < sel.From || uint64(i) > sel.To || !db.matches(i, sel) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		db.Loaded++
		if !fn(db.Records[i]) {
			return nil
		}
	}
	return nil
}

// Subjects calls fn for the subjects with events and their ancestors,
// depth-first with siblings by segment byte order.
func (db *MemDB) Subjects(ctx context.Context, fn func(string) error) error {
	set := map[string]bool{}
	for _, s := range db.subjects {
		for {
			set[s] = true
			if s == "/" {
				break
			}
			if i := strings.LastIndexByte(s, '/'); i > 0 {
				s = s[:i]
			} else {
				s = "/"
			}
		}
	}
	var all []string
	for s := range set {
		all = append(all, s)
	}
	key := func(s string) string { return strings.ReplaceAll(s, "/", "\x01") }
	sort.Slice(all, func(i, j int) bool { return key(all[i]) < key(all[j]) })
	for _, s := range all {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// EventTypes calls fn for the types of the events, sorted.
func (db *MemDB) EventTypes(ctx context.Context, fn func(eventql.EventType) error) error {
	names := append([]string(nil), db.types...)
	sort.Strings(names)
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		if err := fn(eventql.EventType{Name: name}); err != nil {
			return err
		}
	}
	return nil
}

// Emit appends an event's JSON with "signature":null.
func (db *MemDB) Emit(dst []byte, r event.Record) []byte { return db.emitter.Append(dst, r) }

// DataIndexes returns the indexes of the database.
func (db *MemDB) DataIndexes() []eventql.DataIndex { return db.Indexes }

// hasKey reports whether event i has one of the keys of sel in its index.
func (db *MemDB) hasKey(i int, sel eventql.Selection) bool {
	for _, x := range db.Indexes {
		if x.ID != sel.DataIndex {
			continue
		}
		if x.EventTypes != nil && !slices.Contains(x.EventTypes, db.types[i]) {
			return false
		}
		tokens, err := dataindex.Tokens(x.Path)
		if err != nil {
			return false
		}
		for _, k := range dataindex.Keys(nil, db.data[i], tokens) {
			for _, l := range sel.DataKeys {
				if l.Key == k && uint64(i) >= l.From && uint64(i) <= l.To {
					return true
				}
			}
		}
	}
	return false
}
