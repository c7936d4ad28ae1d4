package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	opts.Format = dir.FormatVersion()
	if opts.Format == 0 {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			opts.Format = 1
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("look for a store in the data directory: %w", err)
		case opts.ReadOnly:
			return nil, fmt.Errorf("no store in the data directory %s", dir.Path())
		default:
			if err := dir.SetFormatVersion(pebblestore.FormatVersion); err != nil {
				return nil, err
			}
			opts.Format = pebblestore.FormatVersion
		}
	}
	b, err := pebblestore.Open(path, log, opts)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly && dir.FormatVersion() != pebblestore.FormatVersion {
		if err := dir.SetFormatVersion(pebblestore.FormatVersion); err != nil {
			return nil, errors.Join(err, b.Close())
		}
	}
	return b, nil
}
