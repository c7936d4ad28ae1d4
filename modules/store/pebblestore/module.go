package pebblestore

import (
	"path/filepath"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Dir is the subdirectory of the data directory that holds Pebble's files.
const Dir = "pebble"

// Module provides the store's Opener: Pebble in the data directory.
var Module = fx.Module("pebblestore",
	fx.Provide(func(dir *datadir.Dir, log *zap.Logger) store.Opener {
		return func() (store.Backend, error) {
			return Open(filepath.Join(dir.Path(), Dir), log.Named("pebble"), Options{})
		}
	}),
)
