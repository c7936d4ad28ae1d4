package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/storage"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
)

// storageFlags are the flags that name the storage a command works on
// without a running service: a data directory, or a PostgreSQL database.
func storageFlags(what string) []cli.Flag {
	env := func(name string) []string { return []string{config.EnvVar(name)} }
	return []cli.Flag{
		&cli.StringFlag{Name: config.FlagDataDirectory, EnvVars: env(config.FlagDataDirectory), Usage: "the data directory " + what + " (of a stopped node)"},
		&cli.StringFlag{Name: config.FlagPostgresURL, EnvVars: env(config.FlagPostgresURL), Usage: "the PostgreSQL database " + what},
		&cli.StringFlag{Name: config.FlagPostgresURLFile, EnvVars: env(config.FlagPostgresURLFile), Usage: "read the PostgreSQL URL from this file"},
	}
}

// offlineStorage is the storage the storage flags name: a data directory
// (path) or a PostgreSQL database (url).
type offlineStorage struct {
	path, url string
}

// storageOf reads the storage flags; its error is a usage error.
func storageOf(c *cli.Context) (offlineStorage, error) {
	path, url, urlFile := c.String(config.FlagDataDirectory), c.String(config.FlagPostgresURL), c.String(config.FlagPostgresURLFile)
	postgres := url != "" || urlFile != ""
	switch {
	case path != "" && postgres:
		return offlineStorage{}, fmt.Errorf("--%s and a PostgreSQL URL cannot be combined: name one store", config.FlagDataDirectory)
	case path == "" && !postgres:
		return offlineStorage{}, fmt.Errorf("--%s, --%s or --%s is required", config.FlagDataDirectory, config.FlagPostgresURL, config.FlagPostgresURLFile)
	case postgres:
		url, err := config.LoadPostgresURL(url, urlFile)
		return offlineStorage{url: url}, err
	}
	return offlineStorage{path: path}, nil
}

// Options of the backends the offline commands open.
var (
	pgToRestore    = pgstore.Options{MaxConnections: 4}
	pgSnapshot     = pgstore.Options{Snapshot: true}
	pebbleToVerify = pebblestore.Options{ReadOnly: true, CacheSize: pebblestore.VerifyCacheSize}
)

// openPostgres opens the PostgreSQL backend; its error names the database
// and hosts (never the password).
func (o offlineStorage) openPostgres(ctx context.Context, opts pgstore.Options) (*pgstore.Backend, error) {
	b, err := pgstore.Open(ctx, o.url, zap.NewNop(), opts)
	if err != nil {
		hosts, database := pgstore.Describe(o.url)
		return nil, fmt.Errorf("PostgreSQL database %s on %s: %w", database, hosts, err)
	}
	return b, nil
}

// openPebble takes the data directory's lock and opens its Pebble backend.
func (o offlineStorage) openPebble(ctx context.Context, opts pebblestore.Options) (*datadir.Dir, *pebblestore.Backend, error) {
	dir := datadir.New(o.path, false)
	if err := dir.Open(ctx); err != nil {
		return nil, nil, err
	}
	b, err := storage.OpenBackend(dir, zap.NewNop(), opts)
	if err != nil {
		return nil, nil, errors.Join(err, dir.Close(context.Background()))
	}
	return dir, b, nil
}

// start starts a store within mem on the storage, holding the data
// directory's lock; stop closes both.
func (o offlineStorage) start(ctx context.Context, mem store.Memory) (s *store.Store, stop func() error, err error) {
	var (
		open    store.Opener
		release = func() error { return nil }
	)
	if o.url != "" {
		open = func() (store.Backend, error) { return o.openPostgres(ctx, pgToRestore) }
	} else {
		dir := datadir.New(o.path, false)
		if err := dir.Open(ctx); err != nil {
			return nil, nil, err
		}
		release = func() error { return dir.Close(context.Background()) }
		open = func() (store.Backend, error) { return storage.OpenBackend(dir, zap.NewNop(), pebblestore.Options{}) }
	}
	s = store.New(open, zap.NewNop(), nil, mem)
	if err := s.Start(ctx); err != nil {
		return nil, nil, errors.Join(err, release())
	}
	return s, func() error { return errors.Join(s.Close(context.Background()), release()) }, nil
}
