package pebblestore

import (
	"slices"
	"strings"

	"github.com/eventstore-service/eventstore/modules/store"
)

// A read-only open (offline verification) reads a store of an older format
// version as it is, migrating nothing. Of format version 1 it reads the
// schemas where that version kept them, as the records of feature state
// its migration makes of them; it has no other feature state.

// stateV1 returns the records of space whose key starts with prefix in a
// store of format version 1.
func (b *Backend) stateV1(space, prefix string) ([]store.StateRecord, error) {
	if space != store.SchemaSpace {
		return nil, nil
	}
	all, err := schemasV1(b.db)
	if err != nil {
		return nil, err
	}
	var out []store.StateRecord
	for _, r := range all {
		if strings.HasPrefix(r.Key, prefix) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y store.StateRecord) int { return strings.Compare(x.Key, y.Key) })
	return out, nil
}

// sliceStates iterates records held in memory.
type sliceStates struct {
	records []store.StateRecord
	pos     int
	err     error
}

func (x *sliceStates) Next() bool {
	if x.err != nil || x.pos >= len(x.records) {
		return false
	}
	x.pos++
	return true
}

func (x *sliceStates) Record() store.StateRecord { return x.records[x.pos-1] }

func (x *sliceStates) Close() error { return x.err }
