package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:   "verify",
		Usage:  "check a store offline: every hash from id 0, the links, the head and the indexes (a data directory, or a PostgreSQL database as of one snapshot)",
		Flags:  storageFlags("to check"),
		Action: verifyStore,
	}
}

// verifyStore is `eventstore verify`: exit 0 when the store is intact, 1
// with the first problem otherwise.
func verifyStore(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: verify takes no arguments", c.Args().First()))
	}
	storage, err := storageOf(c)
	if err != nil {
		return usageError(err)
	}
	if storage.path != "" {
		if info, err := os.Stat(storage.path); err != nil || !info.IsDir() {
			return usageError(fmt.Errorf("--%s: %s is not a directory", config.FlagDataDirectory, storage.path))
		}
	}
	failed := func(err error) error {
		return cli.Exit("eventstore: verify: "+err.Error(), lifecycle.ExitFailure)
	}
	backend, release, err := storage.openToVerify(c.Context)
	if err != nil {
		return failed(err)
	}
	defer release()
	head, err := backend.Head()
	if err != nil {
		return failed(err)
	}
	start := time.Now()
	progress := newProgress(c.App.ErrWriter, "checked", "events", int64(head.Count))
	n, err := verify.Verify(c.Context, backend, verify.Options{Progress: func(done uint64) { progress.update(int64(done)) }})
	progress.finish()
	took := time.Since(start)
	if err != nil {
		return failed(fmt.Errorf("%w (after %d events in %s)", err, n, took.Round(time.Millisecond)))
	}
	fmt.Fprintf(c.App.Writer, "eventstore: verified %d events in %s (%s events/s): ids contiguous, hashes and links intact, head and indexes consistent\n",
		n, took.Round(time.Millisecond), perSecond(int64(n), took))
	return nil
}

// openToVerify opens the storage read-only for a verification: a data
// directory (holding its lock, with a block cache for one pass), or a
// PostgreSQL database in one snapshot while nodes may go on writing.
func (o offlineStorage) openToVerify(ctx context.Context) (store.Backend, func(), error) {
	if o.url != "" {
		b, err := o.openPostgres(ctx, pgSnapshot)
		if err != nil {
			return nil, nil, err
		}
		return b, func() { _ = b.Close() }, nil
	}
	dir, b, err := o.openPebble(ctx, pebbleToVerify)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = errors.Join(b.Close(), dir.Close(context.Background())) }, nil
}
