package pebblestore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// FormatVersion is the format version of the stores this binary writes: the
// key layout of keys.go and postings.go, the stored records, and Pebble's
// format major version (pebbleFormat). A data directory records the version
// of its store; Open refuses a newer one and migrates an older one on
// purpose, one step per version (migrate).
//
// Version 1 is the store of the first release, whose data directories
// record no version.
const FormatVersion = 1

// FormatError reports a store of a format version this binary cannot open.
type FormatError struct {
	// Version is the store's format version: newer than FormatVersion, or
	// older for a read-only open, which migrates nothing.
	Version int
}

// Error names both versions and what to do.
func (e *FormatError) Error() string {
	if e.Version > FormatVersion {
		return fmt.Sprintf("data directory has format version %d, newer than format version %d of this binary: run a release that supports format version %d", e.Version, FormatVersion, e.Version)
	}
	return fmt.Sprintf("data directory has format version %d, older than format version %d of this binary: start the service on it once to migrate it", e.Version, FormatVersion)
}

// checkFormat returns a *FormatError unless Open can open a store of format
// version v.
func checkFormat(v int, readOnly bool) error {
	switch {
	case v < 1:
		return fmt.Errorf("invalid format version %d", v)
	case v > FormatVersion || (readOnly && v < FormatVersion):
		return &FormatError{Version: v}
	}
	return nil
}

// pebbleFormat returns the Pebble format major version of the stores of
// format version v. Pebble moves a store forward to the version it is opened
// with, so Open passes the version of the store's own format, and only a
// migration step moves it, with db.RatchetFormatMajorVersion.
func pebbleFormat(v int) pebble.FormatMajorVersion {
	switch v {
	case 1:
		// pebble.FormatNewest of Pebble v2.1.7, which the first release
		// created its stores with.
		return pebble.FormatValueSeparation
	}
	panic(fmt.Sprintf("pebbleFormat: unknown format version %d", v))
}

// migrate moves an open store of format version from to FormatVersion. Each
// step is idempotent: the data directory records the new version after
// Open returns, so a crash in between runs the steps again.
func migrate(db *pebble.DB, from int) error {
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
//	case 1:
//		return db.RatchetFormatMajorVersion(pebbleFormat(2))
func upgrade(_ *pebble.DB, v int) error {
	return fmt.Errorf("no migration step from format version %d", v)
}
