package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/storage"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
)

func verifyCommand() *cli.Command {
	env := func(name string) []string { return []string{config.EnvVar(name)} }
	return &cli.Command{
		Name:  "verify",
		Usage: "check a store offline: every hash from id 0, the links, the head and the indexes (a data directory, or a PostgreSQL database as of one snapshot)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: config.FlagDataDirectory, EnvVars: env(config.FlagDataDirectory), Usage: "the data directory to check (of a stopped node)"},
			&cli.StringFlag{Name: config.FlagPostgresURL, EnvVars: env(config.FlagPostgresURL), Usage: "the PostgreSQL database to check (nodes may keep running)"},
			&cli.StringFlag{Name: config.FlagPostgresURLFile, EnvVars: env(config.FlagPostgresURLFile), Usage: "read the PostgreSQL URL from this file"},
		},
		Action: verifyStore,
	}
}

// verifyStore is `eventstore verify`: exit 0 when the store is intact, 1
// with the first problem otherwise.
func verifyStore(c *cli.Context) error {
	path, url, urlFile := c.String(config.FlagDataDirectory), c.String(config.FlagPostgresURL), c.String(config.FlagPostgresURLFile)
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: verify takes no arguments", c.Args().First()))
	}
	postgres := url != "" || urlFile != ""
	switch {
	case path != "" && postgres:
		return usageError(fmt.Errorf("--%s and a PostgreSQL URL cannot be combined: check one store", config.FlagDataDirectory))
	case path == "" && !postgres:
		return usageError(fmt.Errorf("--%s, --%s or --%s is required", config.FlagDataDirectory, config.FlagPostgresURL, config.FlagPostgresURLFile))
	}
	failed := func(err error) error {
		return cli.Exit("eventstore: verify: "+err.Error(), lifecycle.ExitFailure)
	}
	var (
		n   uint64
		err error
	)
	if postgres {
		if url, err = config.LoadPostgresURL(url, urlFile); err != nil {
			return usageError(err)
		}
		n, err = verifyPostgres(c.Context, url)
	} else {
		if info, statErr := os.Stat(path); statErr != nil || !info.IsDir() {
			return usageError(fmt.Errorf("--%s: %s is not a directory", config.FlagDataDirectory, path))
		}
		n, err = verifyDataDirectory(c.Context, path)
	}
	if err != nil {
		return failed(err)
	}
	fmt.Fprintf(c.App.Writer, "eventstore: verified %d events: ids contiguous, hashes and links intact, head and indexes consistent\n", n)
	return nil
}

// verifyDataDirectory checks the Pebble store of a data directory, holding
// its lock.
func verifyDataDirectory(ctx context.Context, path string) (uint64, error) {
	dir := datadir.New(path, false)
	if err := dir.Open(ctx); err != nil {
		return 0, err
	}
	defer dir.Close(context.Background())
	backend, err := storage.OpenBackend(dir, zap.NewNop(), pebblestore.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer backend.Close()
	return store.Verify(ctx, pebblestore.NewVerifier(backend))
}

// verifyPostgres checks a PostgreSQL database in one snapshot, while nodes
// may go on writing.
func verifyPostgres(ctx context.Context, url string) (uint64, error) {
	backend, err := pgstore.Open(ctx, url, zap.NewNop(), pgstore.Options{Snapshot: true})
	if err != nil {
		hosts, database := pgstore.Describe(url)
		return 0, fmt.Errorf("PostgreSQL database %s on %s: %w", database, hosts, err)
	}
	defer backend.Close()
	return store.Verify(ctx, pgstore.NewVerifier(backend))
}
