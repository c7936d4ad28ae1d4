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
	body := "{}"
	if c.Bool("without-schemas") {
		body = `{"schemas":false}`
	}
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
	events, schemas, lastHash, err := copyBackup(tmp, resp.Body, progress.update)
	progress.finish()
	switch {
	case err != nil:
	case events != want:
		err = fmt.Errorf("the service announced %d events and sent %d: the backup is incomplete", want, events)
	case events > 0 && lastHash != headHash:
		err = fmt.Errorf("the last event's hash %s is not the announced head hash %s", lastHash, headHash)
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
	fmt.Fprintf(c.App.Writer, "eventstore: backed up %d events and %d schemas to %s in %s (head hash %s)\n",
		events, schemas, output, time.Since(start).Round(time.Millisecond), headHash)
	return nil
}

// copyBackup copies the lines of a backup stream to w, counting event and
// schema lines and remembering the last event's hash; an error line ends
// it with that error.
func copyBackup(w io.Writer, stream io.Reader, progress func(int64)) (events uint64, schemas int, lastHash string, err error) {
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
			return events, schemas, lastHash, out.Flush()
		case readErr != nil:
			return events, schemas, lastHash, fmt.Errorf("the stream broke off after %d events: %w", events, readErr)
		case bytes.HasPrefix(line, []byte(`{"type":"event"`)):
			events++
			if end := len(line) - 1 - len(hashEnd); end >= 64 {
				lastHash = string(line[end-64 : end])
			}
			progress(int64(events))
		case bytes.HasPrefix(line, []byte(`{"type":"schema"`)):
			schemas++
		default:
			return events, schemas, lastHash, fmt.Errorf("the service ended the backup with %s", bytes.TrimSpace(line))
		}
		if _, err := out.Write(line); err != nil {
			return events, schemas, lastHash, err
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
