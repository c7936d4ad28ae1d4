package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// FormatVersion is the format version of the stores this binary writes: the
// key layout of keys.go and postings.go, the stored records, and Pebble's
// format major version (pebbleFormat). A data directory records the version
// of its store; Open refuses a newer one and migrates an older one on
// purpose, one step per version (migrate).
//
// Version 1 is the store of the first release, whose data directories
// record no version. Version 2 keeps feature state (keys.go: space v) and
// counts its changes in the head; the registered schemas are records of it.
const FormatVersion Format = 2

// Format is a format version of the Pebble store.
type Format int

// DetectFormat returns the format version of the store in dir, given the
// version its data directory records (0 for none), and whether there is a
// store at all. A store in a directory that records no version is of
// format version 1 (the first release recorded none); where there is no
// store, a new one gets FormatVersion.
func DetectFormat(dir string, recorded int) (v Format, exists bool, err error) {
	if recorded != 0 {
		return Format(recorded), true, nil
	}
	switch _, err := os.Stat(dir); {
	case err == nil:
		return 1, true, nil
	case errors.Is(err, fs.ErrNotExist):
		return FormatVersion, false, nil
	default:
		return 0, false, fmt.Errorf("look for a store in the data directory: %w", err)
	}
}

// FormatError reports a store of a format version this binary cannot open.
type FormatError struct {
	// Version is the store's format version, newer than FormatVersion.
	Version Format
}

// Error names both versions and what to do.
func (e *FormatError) Error() string {
	return fmt.Sprintf("data directory has format version %d, newer than format version %d of this binary: run a release that supports format version %d", e.Version, FormatVersion, e.Version)
}

// checkFormat returns a *FormatError unless Open can open a store of format
// version v: any version up to FormatVersion, older ones migrated by a
// writable open and read as they are by a read-only one (compat.go).
func checkFormat(v Format) error {
	switch {
	case v < 1:
		return fmt.Errorf("invalid format version %d", v)
	case v > FormatVersion:
		return &FormatError{Version: v}
	}
	return nil
}

// pebbleFormat returns the Pebble format major version of the stores of
// format version v. Pebble moves a store forward to the version it is opened
// with, so Open passes the version of the store's own format, and only a
// migration step moves it, with db.RatchetFormatMajorVersion.
func pebbleFormat(v Format) pebble.FormatMajorVersion {
	switch v {
	case 1, 2:
		// pebble.FormatNewest of Pebble v2.1.7, which the first release
		// created its stores with.
		return pebble.FormatValueSeparation
	}
	panic(fmt.Sprintf("pebbleFormat: unknown format version %d", v))
}

// migrate moves an open store of format version from to FormatVersion. Each
// step is idempotent: the data directory records the new version after
// Open returns, so a crash in between runs the steps again.
func migrate(db *pebble.DB, from Format) error {
	for v := from; v < FormatVersion; v++ {
		if err := upgrade(db, v); err != nil {
			return fmt.Errorf("migrate format version %d to %d: %w", v, v+1, err)
		}
	}
	return nil
}

// upgrade moves a store of format version v to v+1. A new format version
// adds its step here, for example a new Pebble format major version:
//
//	case 2:
//		return db.RatchetFormatMajorVersion(pebbleFormat(3))
func upgrade(db *pebble.DB, v Format) error {
	switch v {
	case 1:
		return schemasIntoState(db)
	}
	return fmt.Errorf("no migration step from format version %d", v)
}

// schemasIntoState moves a store of format version 1 to 2: its schemas
// become records of feature state, versioned 1, 2, … in their registration
// order (those stored before the order was kept first, by type), and the
// head counts them. One synced batch; run again on a store it moved
// already, it finds no schemas of version 1 and changes nothing.
func schemasIntoState(db *pebble.DB) error {
	state, err := schemasV1(db)
	if err != nil {
		return err
	}
	value, closer, err := db.Get(headKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if len(state) == 0 {
			return nil // an empty store
		}
		value = nil
	case err != nil:
		return err
	default:
		value = bytes.Clone(value)
		closer.Close()
	}
	if len(value) == headSize || len(state) == 0 {
		return nil // moved already, or nothing to move
	}
	head := store.Head{LastHash: event.ZeroHash}
	if value != nil {
		if head, err = decodeHead(value); err != nil {
			return err
		}
	}
	head.States = uint64(len(state))
	batch := db.NewBatch()
	defer batch.Close()
	if err := setState(batch, state); err != nil {
		return err
	}
	headValue, err := encodeHead(head)
	if err != nil {
		return err
	}
	for _, err := range []error{
		batch.Set(headKey, headValue, nil),
		batch.DeleteRange([]byte{spaceSchemaV1}, []byte{spaceSchemaV1 + 1}, nil),
		batch.DeleteRange([]byte{spaceOrderV1}, []byte{spaceOrderV1 + 1}, nil),
	} {
		if err != nil {
			return err
		}
	}
	return batch.Commit(pebble.Sync)
}

// schemasV1 returns the schemas of a store of format version 1 as records
// of feature state, versioned 1, 2, … in their registration order (those
// stored before the order was kept first, by type).
func schemasV1(db *pebble.DB) ([]store.StateRecord, error) {
	raw := map[string][]byte{}
	if err := scan(db, spaceSchemaV1, func(key, value []byte) {
		raw[string(key[1:])] = bytes.Clone(value)
	}); err != nil {
		return nil, err
	}
	var ordered []string
	placed := map[string]bool{}
	if err := scan(db, spaceOrderV1, func(_, value []byte) {
		if _, ok := raw[string(value)]; ok && !placed[string(value)] {
			ordered = append(ordered, string(value))
			placed[string(value)] = true
		}
	}); err != nil {
		return nil, err
	}
	var types []string
	for _, t := range slices.Sorted(maps.Keys(raw)) {
		if !placed[t] {
			types = append(types, t)
		}
	}
	types = append(types, ordered...)
	state := make([]store.StateRecord, len(types))
	for i, t := range types {
		state[i] = store.StateRecord{Space: store.SchemaSpace, Key: t, Value: raw[t], Version: uint64(i + 1)}
	}
	return state, nil
}

// scan calls fn with every key and value of a key space of db, in key order.
func scan(db *pebble.DB, space byte, fn func(key, value []byte)) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{space}, UpperBound: []byte{space + 1}})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
	}
	return errors.Join(it.Error(), it.Close())
}
