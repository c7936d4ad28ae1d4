package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/backup"
	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/restore"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "restore a backup file into an empty store, all or nothing, proving every line",
		ArgsUsage: "BACKUP-FILE",
		Flags: append(storageFlags("to restore into"),
			&cli.StringFlag{Name: config.FlagMaxEventSize, Value: "1MiB", Usage: "largest canonical data of one event (as the service's --max-event-size)"},
			&cli.StringFlag{Name: config.FlagMaxRequestSize, Value: "16MiB", Usage: "largest schema, as a registration's request body (as the service's --max-request-size)"},
			&cli.IntFlag{Name: config.FlagMaxEventSchemas, Value: store.DefaultMaxSchemas, Usage: "most event schemas (as the service's --max-event-schemas)"},
			&cli.IntFlag{Name: config.FlagMaxSubscriptions, Value: subscriptions.DefaultMaxSubscriptions, Usage: "most subscriptions (as the service's --max-subscriptions)"}),
		Action: runRestore,
	}
}

// runRestore is `eventstore restore`: the backup file into the empty store
// of a data directory (created if missing) or a PostgreSQL database.
func runRestore(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError(errors.New("restore takes one argument: the backup file"))
	}
	target, err := storageOf(c)
	if err != nil {
		return usageError(err)
	}
	var limits backup.Limits
	for _, f := range []struct {
		flag string
		into *int64
	}{{config.FlagMaxEventSize, &limits.MaxEventSize}, {config.FlagMaxRequestSize, &limits.MaxSchemaSize}} {
		if *f.into, err = config.ParseSize(c.String(f.flag)); err != nil {
			return usageError(fmt.Errorf("--%s: %w", f.flag, err))
		}
	}
	for _, flag := range []string{config.FlagMaxEventSchemas, config.FlagMaxSubscriptions} {
		if c.Int(flag) < 1 {
			return usageError(fmt.Errorf("--%s must be at least 1, got %d", flag, c.Int(flag)))
		}
	}
	limits.MaxSubscriptions = c.Int(config.FlagMaxSubscriptions)
	failed := func(err error) error { return cli.Exit("eventstore: restore: "+err.Error(), lifecycle.ExitFailure) }
	file, err := os.Open(c.Args().First())
	if err != nil {
		return failed(err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return failed(err)
	}
	s, stop, err := target.start(c.Context, store.Memory{MaxSchemas: c.Int(config.FlagMaxEventSchemas)})
	if err != nil {
		return failed(err)
	}
	progress := newProgress(c.App.ErrWriter, "read", "bytes", info.Size())
	read := &countingReader{r: file}
	start := time.Now()
	src := backup.ReadAhead(backup.NewReader(read, limits))
	defer src.Close()
	restored, err := restore.Into(c.Context, s, src, restore.Hooks{Progress: func(uint64) { progress.update(read.n.Load()) }}, zap.NewNop())
	progress.finish()
	err = errors.Join(err, stop())
	var backupErr *restore.BackupError
	switch {
	case errors.Is(err, restore.ErrNotEmpty):
		return failed(errors.New("the store is not empty: restore only into an empty store"))
	case errors.As(err, &backupErr):
		return failed(fmt.Errorf("invalid backup: %w (nothing was restored)", backupErr))
	case err != nil:
		return failed(err)
	}
	what := []string{fmt.Sprintf("%d events", restored.Events), fmt.Sprintf("%d schemas", restored.Schemas)}
	if restored.DataIndexes > 0 {
		what = append(what, fmt.Sprintf("%d data indexes", restored.DataIndexes))
	}
	if restored.States > 0 {
		what = append(what, fmt.Sprintf("%d subscriptions", restored.States))
	}
	fmt.Fprintf(c.App.Writer, "eventstore: restored %s in %s (head hash %s)\n",
		listed(what), time.Since(start).Round(time.Millisecond), restored.HeadHash)
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
