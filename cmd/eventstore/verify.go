package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/storage"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check a stopped store offline: every hash from id 0, the links, the head and the indexes",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: config.FlagDataDirectory, EnvVars: []string{config.EnvVar(config.FlagDataDirectory)}, Usage: "the data directory to check"},
		},
		Action: verifyStore,
	}
}

// verifyStore is `eventstore verify`: exit 0 when the store is intact, 1
// with the first problem otherwise.
func verifyStore(c *cli.Context) error {
	path := c.String(config.FlagDataDirectory)
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: verify takes no arguments", c.Args().First()))
	}
	if path == "" {
		return usageError(fmt.Errorf("--%s is required", config.FlagDataDirectory))
	}
	if info, err := os.Stat(path); err != nil || !info.IsDir() {
		return usageError(fmt.Errorf("--%s: %s is not a directory", config.FlagDataDirectory, path))
	}
	failed := func(err error) error {
		return cli.Exit("eventstore: verify: "+err.Error(), lifecycle.ExitFailure)
	}
	dir := datadir.New(path, false)
	if err := dir.Open(c.Context); err != nil {
		return failed(err)
	}
	defer dir.Close(context.Background())
	backend, err := storage.OpenBackend(dir, zap.NewNop(), pebblestore.Options{ReadOnly: true, CacheSize: pebblestore.VerifyCacheSize})
	if err != nil {
		return failed(err)
	}
	defer backend.Close()
	head, err := backend.Head()
	if err != nil {
		return failed(err)
	}
	start := time.Now()
	progress := newProgressLine(c.App.Writer, "checked", "events", head.Count)
	n, err := store.Verify(c.Context, backend, store.VerifyOptions{Progress: progress.update})
	progress.clear()
	took := time.Since(start)
	if err != nil {
		return failed(fmt.Errorf("%w (after %d events in %s)", err, n, took.Round(time.Millisecond)))
	}
	fmt.Fprintf(c.App.Writer, "eventstore: verified %d events in %s (%s events/s): ids contiguous, hashes and links intact, head and indexes consistent\n",
		n, took.Round(time.Millisecond), rate(n, took))
	return nil
}
