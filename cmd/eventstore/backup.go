package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:  "backup",
		Usage: "back a running service up into a file, written atomically and kept only when every event arrived",
		Flags: append(remoteFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the backup file to write"},
			&cli.BoolFlag{Name: "without-schemas", Usage: "leave the schemas out: event lines only (as the Merkle tool of the ecosystem reads them)"},
			&cli.BoolFlag{Name: "with-subscriptions", Usage: "add the subscriptions with their positions (the ecosystem's tools reject such lines)"},
			&cli.BoolFlag{Name: "with-data-indexes", Usage: "add the definitions of the data indexes, which a restore builds again (the ecosystem's tools reject such lines)"},
		),
		Action: runBackup,
	}
}

// runBackup is `eventstore backup`: POST /api/v1/backup into a temporary
// file beside the output, renamed to it once the number of event lines and
// the hash of the last equal what the service announced in the headers.
func runBackup(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: backup takes no arguments (the file is -o)", c.Args().First()))
	}
	output := c.String("output")
	if output == "" {
		return usageError(errors.New("--output (-o) is required"))
	}
	r, err := newRemote(c)
	if err != nil {
		return usageError(err)
	}
	failed := func(err error) error { return cli.Exit("eventstore: backup: "+err.Error(), lifecycle.ExitFailure) }
	body := fmt.Sprintf(`{"schemas":%t,"subscriptions":%t,"dataIndexes":%t}`, !c.Bool("without-schemas"), c.Bool("with-subscriptions"), c.Bool("with-data-indexes"))
	start := time.Now()
	resp, err := r.do(c.Context, http.MethodPost, "/api/v1/backup", strings.NewReader(body))
	if err != nil {
		return failed(err)
	}
	defer resp.Body.Close()
	want, err := strconv.ParseUint(resp.Header.Get("Eventstore-Backup-Events"), 10, 64)
	headHash := resp.Header.Get("Eventstore-Backup-Head-Hash")
	if err != nil || len(headHash) != len(event.ZeroHash) {
		return failed(errors.New("the service sent no Eventstore-Backup-Events and Eventstore-Backup-Head-Hash headers"))
	}
	tmp, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*.tmp")
	if err != nil {
		return failed(err)
	}
	defer os.Remove(tmp.Name()) // gone by the rename when all went well
	progress := newProgress(c.App.ErrWriter, "received", "events", int64(want))
	got, err := copyBackup(tmp, resp.Body, progress.update)
	progress.finish()
	switch {
	case err != nil:
	case got.events != want:
		err = fmt.Errorf("the service announced %d events and sent %d: the backup is incomplete", want, got.events)
	case got.events > 0 && got.lastHash != headHash:
		err = fmt.Errorf("the last event's hash %s is not the announced head hash %s", got.lastHash, headHash)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), output)
	}
	if err == nil {
		err = syncDir(filepath.Dir(output))
	}
	if err != nil {
		return failed(err)
	}
	what := []string{fmt.Sprintf("%d events", got.events), fmt.Sprintf("%d schemas", got.schemas)}
	if c.Bool("with-data-indexes") {
		what = append(what, fmt.Sprintf("%d data indexes", got.dataIndexes))
	}
	if c.Bool("with-subscriptions") {
		what = append(what, fmt.Sprintf("%d subscriptions", got.subscriptions))
	}
	fmt.Fprintf(c.App.Writer, "eventstore: backed up %s to %s in %s (head hash %s)\n",
		listed(what), output, time.Since(start).Round(time.Millisecond), headHash)
	return nil
}

// backupCounts are what a backup stream held: its lines by type and the
// last event's hash.
type backupCounts struct {
	events                              uint64
	schemas, dataIndexes, subscriptions int
	lastHash                            string
}

// copyBackup copies the lines of a backup stream to w, counting them by
// type and remembering the last event's hash; an error line ends it with
// that error.
func copyBackup(w io.Writer, stream io.Reader, progress func(int64)) (got backupCounts, err error) {
	in := bufio.NewReaderSize(stream, 1<<20)
	out := bufio.NewWriterSize(w, 1<<20)
	const hashEnd = `"}}` // an event line ends in "hash":"<64 hex>"}}
	for {
		line, readErr := in.ReadSlice('\n')
		if readErr == bufio.ErrBufferFull {
			var rest []byte
			rest, readErr = in.ReadBytes('\n')
			line = append(bytes.Clone(line), rest...)
		}
		switch {
		case len(line) == 0 && readErr == io.EOF:
			return got, out.Flush()
		case readErr != nil:
			return got, fmt.Errorf("the stream broke off after %d events: %w", got.events, readErr)
		case bytes.HasPrefix(line, []byte(`{"type":"event"`)):
			got.events++
			if end := len(line) - 1 - len(hashEnd); end >= 64 {
				got.lastHash = string(line[end-64 : end])
			}
			progress(int64(got.events))
		case bytes.HasPrefix(line, []byte(`{"type":"schema"`)):
			got.schemas++
		case bytes.HasPrefix(line, []byte(`{"type":"subscription"`)):
			got.subscriptions++
		case bytes.HasPrefix(line, []byte(`{"type":"dataIndex"`)):
			got.dataIndexes++
		default:
			return got, fmt.Errorf("the service ended the backup with %s", bytes.TrimSpace(line))
		}
		if _, err := out.Write(line); err != nil {
			return got, err
		}
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// listed joins items as a sentence does: "a, b and c".
func listed(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
