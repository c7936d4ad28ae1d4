package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/store"
)

// stateKey returns the key of the record of key in space (keys.go).
func stateKey(dst []byte, space, key string) []byte {
	return append(statePrefix(dst, space), key...)
}

// statePrefix returns the prefix of the records of space.
func statePrefix(dst []byte, space string) []byte {
	return append(append(append(dst, spaceState), space...), terminator)
}

// stateValue returns the stored form of a record: its version, then its value.
func stateValue(dst []byte, r store.StateRecord) []byte {
	return append(binary.BigEndian.AppendUint64(dst, r.Version), r.Value...)
}

// decodeState returns the record of space whose key (without the prefix)
// and stored value are given; the value is not copied.
func decodeState(space string, key, value []byte) (store.StateRecord, error) {
	if len(value) < 8 {
		return store.StateRecord{}, fmt.Errorf("state %s/%s: value of %d bytes", space, key, len(value))
	}
	return store.StateRecord{Space: space, Key: string(key), Value: value[8:], Version: binary.BigEndian.Uint64(value)}, nil
}

// setState adds the puts and deletes of feature state to batch.
func setState(batch *pebble.Batch, records []store.StateRecord) error {
	var k, v []byte
	for _, r := range records {
		k = stateKey(k[:0], r.Space, r.Key)
		var err error
		if r.Value == nil {
			err = batch.Delete(k, nil)
		} else {
			v = stateValue(v[:0], r)
			err = batch.Set(k, v, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// State returns the record of key in space.
func (b *Backend) State(space, key string) (store.StateRecord, bool, error) {
	if b.format == 1 {
		records, err := b.stateV1(space, key)
		for _, r := range records {
			if r.Key == key {
				return r, true, nil
			}
		}
		return store.StateRecord{}, false, err
	}
	return readState(b.db, space, key)
}

// readState returns the record of key in space as r holds it.
func readState(r pebble.Reader, space, key string) (store.StateRecord, bool, error) {
	value, closer, err := r.Get(stateKey(nil, space, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return store.StateRecord{}, false, nil
	}
	if err != nil {
		return store.StateRecord{}, false, fmt.Errorf("read state %s/%s: %w", space, key, err)
	}
	defer closer.Close()
	rec, err := decodeState(space, []byte(key), value)
	rec.Value = append([]byte{}, rec.Value...)
	return rec, err == nil, err
}

// States iterates the records of space whose key starts with prefix.
func (b *Backend) States(space, prefix string) store.StateIterator {
	if b.format == 1 {
		records, err := b.stateV1(space, prefix)
		return &sliceStates{records: records, err: err}
	}
	return readStates(b.db, space, prefix)
}

// readStates iterates the records of space whose key starts with prefix
// as r holds them.
func readStates(r pebble.Reader, space, prefix string) store.StateIterator {
	base := statePrefix(nil, space)
	lower := append(append([]byte(nil), base...), prefix...)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return &stateIterator{err: err}
	}
	return &stateIterator{it: it, space: space, skip: len(base)}
}

// ViewStates calls fn with a reader of a snapshot of the database.
func (b *Backend) ViewStates(fn func(r store.StateReader) error) error {
	if b.format == 1 {
		return fn(b) // a store of format 1 is opened to be read only
	}
	snap := b.db.NewSnapshot()
	defer snap.Close()
	return fn(snapshotStates{snap})
}

// snapshotStates reads feature state from a snapshot.
type snapshotStates struct{ snap *pebble.Snapshot }

func (v snapshotStates) State(space, key string) (store.StateRecord, bool, error) {
	return readState(v.snap, space, key)
}

func (v snapshotStates) States(space, prefix string) store.StateIterator {
	return readStates(v.snap, space, prefix)
}

// stateIterator walks the records of a space.
type stateIterator struct {
	it      *pebble.Iterator
	space   string
	skip    int // bytes of the space's prefix in each key
	started bool
	record  store.StateRecord
	err     error
}

func (x *stateIterator) Next() bool {
	if x.it == nil || x.err != nil {
		return false
	}
	var ok bool
	if x.started {
		ok = x.it.Next()
	} else {
		ok, x.started = x.it.First(), true
	}
	if !ok {
		return false
	}
	x.record, x.err = decodeState(x.space, x.it.Key()[x.skip:], x.it.Value())
	return x.err == nil
}

func (x *stateIterator) Record() store.StateRecord { return x.record }

func (x *stateIterator) Close() error {
	if x.it == nil {
		return x.err
	}
	err := errors.Join(x.err, x.it.Error(), x.it.Close())
	x.it = nil
	return err
}
