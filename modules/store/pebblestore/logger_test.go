package pebblestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// failing returns a memory file system whose operations of the given kinds
// on files whose name contains name fail with err while the toggle is on,
// and the number of operations it failed.
func failing(err error, name string, kinds ...errorfs.OpKind) (vfs.FS, *errorfs.Toggle, *atomic.Int64) {
	var failed atomic.Int64
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		for _, k := range kinds {
			if op.Kind == k && strings.Contains(op.Path, name) {
				failed.Add(1)
				return err
			}
		}
		return nil
	})}
	return errorfs.Wrap(vfs.NewMem(), toggle), toggle, &failed
}

// commitOne commits one event as the next after head and returns the new head.
func commitOne(t *testing.T, b *Backend, head store.Head) (store.Head, error) {
	t.Helper()
	c := event.Candidate{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"pad":"` + strings.Repeat("x", 500) + `"}`)}
	at := event.NextTime(time.Now(), head.LastTime)
	_, r := event.Seal(nil, c, head.Count, at, []byte(head.LastHash))
	next := store.Head{Count: head.Count + 1, LastHash: r.Hash(), LastTime: at}
	tx, err := b.Begin(context.Background(), 0)
	if err != nil {
		return next, err
	}
	return next, tx.Commit(store.Batch{Records: []store.Written{{Record: r, Subject: c.Subject, Type: c.Type}}, Head: next})
}

func TestErrorRepeatsAreRateLimited(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := newLogger(zap.New(core), repeatInterval)
	flushError := func(l *logger, i int) {
		l.Errorf("background error: %s", fmt.Errorf("[JOB %d] flush error: %06d.sst: no space left on device", i, 100+i))
	}
	for i := 0; i < 90; i++ { // a second of retries
		flushError(l, i)
	}
	l.Errorf("background error: %s", errors.New("another error"))
	if got := logs.TakeAll(); len(got) != 2 || got[0].Message != "background error: [JOB 0] flush error: 000100.sst: no space left on device" ||
		got[1].Message != "background error: another error" || got[0].Level != zapcore.ErrorLevel || len(got[0].Context) != 0 {
		t.Fatalf("a second of repeats: %+v", got)
	}

	const interval = 300 * time.Millisecond
	l = newLogger(zap.New(core), interval)
	flushError(l, 1)
	flushError(l, 2)
	flushError(l, 3)
	time.Sleep(interval)
	flushError(l, 4)
	got := logs.TakeAll()
	if len(got) != 2 || got[1].Message != "background error: [JOB 4] flush error: 000104.sst: no space left on device" ||
		got[1].ContextMap()["suppressed"] != int64(2) {
		t.Fatalf("repeats after the interval: %+v", got)
	}
}

// TestFullDiskFlushLogsOnce lets Pebble retry a flush that fails with ENOSPC
// as fast as it does and checks that it logs one line.
func TestFullDiskFlushLogsOnce(t *testing.T) {
	fs, toggle, failed := failing(syscall.ENOSPC, ".sst", errorfs.OpCreate, errorfs.OpFileWrite)
	core, logs := observer.New(zapcore.InfoLevel)
	b, err := Open("data", zap.New(core), Options{FS: fs, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	head, err := commitOne(t, b, store.Head{LastHash: event.ZeroHash})
	if err != nil {
		t.Fatal(err)
	}
	toggle.On()
	flushed, err := b.db.AsyncFlush()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for failed.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	toggle.Off()
	<-flushed
	if failed.Load() < 20 {
		t.Fatalf("Pebble retried the flush %d times", failed.Load())
	}
	if got := logs.FilterLevelExact(zapcore.ErrorLevel).All(); len(got) != 1 || !strings.Contains(got[0].Message, "no space left on device") {
		t.Fatalf("%d failed flushes logged as %d lines, the first %+v", failed.Load(), len(got), got[:min(len(got), 1)])
	}
	if _, err := commitOne(t, b, head); err != nil {
		t.Fatalf("commit after the disk has room again: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFatalErrorOfTheCallerIsReturned checks that a Fatalf that Pebble calls
// on the goroutine of Open or Commit comes back as their error.
func TestFatalErrorOfTheCallerIsReturned(t *testing.T) {
	fs, toggle, _ := failing(errorfs.ErrInjected, "MANIFEST", errorfs.OpFileWrite)
	toggle.On()
	if _, err := Open("data", zap.NewNop(), Options{FS: fs}); !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "MANIFEST") {
		t.Fatalf("open with a failing MANIFEST: %v", err)
	}

	fs, toggle, _ = failing(errorfs.ErrInjected, ".log", errorfs.OpFileWrite)
	b, err := Open("data", zap.NewNop(), Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	toggle.On()
	var fatal *fatalError
	if _, err := commitOne(t, b, store.Head{LastHash: event.ZeroHash}); !errors.As(err, &fatal) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("commit with a failing WAL: %v", err)
	}
}

// TestBackgroundFatalErrorExits runs a flush whose MANIFEST write fails in a
// child process: Pebble calls Fatalf on its flush goroutine, and the process
// logs FATAL and exits with 1 instead of dying of a panic.
func TestBackgroundFatalErrorExits(t *testing.T) {
	if os.Getenv("PEBBLESTORE_FATAL_CHILD") == "1" {
		failInBackground(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBackgroundFatalErrorExits$")
	cmd.Env = append(os.Environ(), "PEBBLESTORE_FATAL_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit code 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "goroutine ") {
		t.Fatalf("child panicked:\n%s", stderr.String())
	}
	var fatal []map[string]any
	scanner := bufio.NewScanner(&stdout)
	for scanner.Scan() {
		var entry map[string]any
		if json.Unmarshal(scanner.Bytes(), &entry) == nil && entry["level"] == "fatal" {
			fatal = append(fatal, entry)
		}
	}
	if len(fatal) != 1 || fatal[0]["msg"] != "storage fatal error, exiting" ||
		!strings.Contains(fmt.Sprint(fatal[0]["error"]), "MANIFEST") || !strings.Contains(fmt.Sprint(fatal[0]["error"]), errorfs.ErrInjected.Error()) {
		t.Fatalf("FATAL entries %v in stdout:\n%s", fatal, stdout.String())
	}
}

func failInBackground(t *testing.T) {
	fs, toggle, _ := failing(errorfs.ErrInjected, "MANIFEST", errorfs.OpFileWrite, errorfs.OpFileSync)
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stdout), zapcore.DebugLevel))
	b, err := Open("data", log, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commitOne(t, b, store.Head{LastHash: event.ZeroHash}); err != nil {
		t.Fatal(err)
	}
	toggle.On()
	_ = b.db.Flush() // the flush goroutine ends the process
	t.Fatal("the process survived a failed MANIFEST write")
}
