package storage

import (
	"errors"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// OpenBackend opens the Pebble store of the opened data directory dir with
// opts, of the format version the directory records, and records
// pebblestore.FormatVersion once a writable open has migrated it. A
// directory that records no version holds format version 1 when it has a
// store (the first release recorded none), and a new directory gets its
// version recorded before its store is created. A newer version is refused
// with a *pebblestore.FormatError.
func OpenBackend(dir *datadir.Dir, log *zap.Logger, opts pebblestore.Options) (*pebblestore.Backend, error) {
	path := filepath.Join(dir.Path(), pebblestore.Dir)
	format, exists, err := pebblestore.DetectFormat(path, dir.FormatVersion())
	switch {
	case err != nil:
		return nil, err
	case !exists && opts.ReadOnly:
		return nil, fmt.Errorf("no store in the data directory %s", dir.Path())
	case !exists:
		if err := dir.SetFormatVersion(int(pebblestore.FormatVersion)); err != nil {
			return nil, err
		}
	}
	opts.Format = format
	b, err := pebblestore.Open(path, log, opts)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly && dir.FormatVersion() != int(pebblestore.FormatVersion) {
		if err := dir.SetFormatVersion(int(pebblestore.FormatVersion)); err != nil {
			return nil, errors.Join(err, b.Close())
		}
	}
	return b, nil
}
