package restore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/restore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// pg is the cluster of the tests on PostgreSQL.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// The library's helpers, under the names these tests use.
const lib = storetest.Lib

var (
	candidate    = storetest.Candidate
	write        = storetest.Write
	libraryStore = storetest.Library
)

// itemSource is a restore.Source over fixed items, failing with err (unless
// nil) where the items end.
type itemSource struct {
	items []restore.Item
	err   error
}

func (s *itemSource) Next() (restore.Item, error) {
	if len(s.items) == 0 {
		if s.err != nil {
			return restore.Item{}, s.err
		}
		return restore.Item{}, io.EOF
	}
	item := s.items[0]
	s.items = s.items[1:]
	return item, nil
}

// backupOf returns the items of a backup of s: its events, then a schema.
func backupOf(t *testing.T, s *store.Store, schemaType string) []restore.Item {
	t.Helper()
	var items []restore.Item
	it := s.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for it.Next() {
		r := it.Record()
		f, err := event.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		rec := event.Record{ID: r.ID, JSON: append([]byte(nil), r.JSON...)}
		items = append(items, restore.Item{Line: len(items) + 1, Event: &store.Written{Record: rec, Subject: f.Subject, Type: f.Type}})
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if schemaType != "" {
		items = append(items, restore.Item{Line: len(items) + 1, Schema: &store.SchemaWritten{Type: schemaType, Raw: []byte(`{"type":"object","properties":{}}`)}})
	}
	return items
}

// readAll returns the records of s in id order.
func readAll(t *testing.T, s *store.Store) []string {
	t.Helper()
	var out []string
	it := s.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for it.Next() {
		out = append(out, string(it.Record().JSON))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRestore(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		source := libraryStore(t, b)
		items := backupOf(t, source, lib+"book-acquired")

		open := b.New(t)
		target := storetest.Start(t, open)
		// A Begin that refuses ends the restore before anything is written.
		refused := errors.New("not now")
		if _, err := restore.Into(context.Background(), target, &itemSource{items: items}, restore.Hooks{Begin: func() error { return refused }}, zap.NewNop()); !errors.Is(err, refused) || target.Durable() != 0 {
			t.Fatalf("restore refused by Begin: %v, %d events", err, target.Durable())
		}
		var progress []uint64
		begun := 0
		hooks := restore.Hooks{Begin: func() error { begun++; return nil }, Progress: func(n uint64) { progress = append(progress, n) }}
		restored, err := restore.Into(context.Background(), target, &itemSource{items: items}, hooks, zap.NewNop())
		if err != nil || begun != 1 {
			t.Fatalf("restore: %v, Begin called %d times", err, begun)
		}
		if restored.Events != 7 || restored.Schemas != 1 || restored.HeadHash != items[6].Event.Record.Hash() || len(progress) == 0 || progress[len(progress)-1] != 7 {
			t.Fatalf("restored %+v, progress %v", restored, progress)
		}
		if got, want := readAll(t, target), readAll(t, source); len(got) != 7 || got[6] != want[6] || got[0] != want[0] {
			t.Fatalf("restored events differ:\n%v\n%v", got, want)
		}
		if et, found, _ := target.EventType(lib + "book-acquired"); !found || et.Schema == nil {
			t.Fatal("the restored schema is not registered")
		}
		// New writes continue the chain.
		next := write(t, target, candidate("/after", lib+"x", `{}`))
		if next[0].ID != 7 {
			t.Fatalf("the next write got id %d", next[0].ID)
		}
		// A store with events takes no backup, and does not begin one.
		if _, err := restore.Into(context.Background(), target, &itemSource{items: items}, hooks, zap.NewNop()); !errors.Is(err, restore.ErrNotEmpty) || begun != 1 {
			t.Fatalf("restore into a store with events: %v, Begin called %d times", err, begun)
		}
		storetest.Close(t, target)
		backend, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer backend.Close()
		if n, err := storetest.Verify(context.Background(), backend); err != nil || n != 8 {
			t.Fatalf("verify after the restore: %d events, %v", n, err)
		}
	})
}

func TestFailedRestoreLeavesTheStoreEmpty(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		source := libraryStore(t, b)
		items := backupOf(t, source, "")
		bad := &restore.BackupError{Line: 6, Detail: "hash mismatch"}
		target := storetest.Start(t, b.New(t))
		_, err := restore.Into(context.Background(), target, &itemSource{items: items[:5], err: bad}, restore.Hooks{}, zap.NewNop())
		if !errors.Is(err, bad) {
			t.Fatalf("restore of a bad backup: %v", err)
		}
		// A schema that a restored event does not match.
		conflicting := append(backupOf(t, source, ""), restore.Item{Line: 8,
			Schema: &store.SchemaWritten{Type: lib + "book-acquired", Raw: []byte(`{"type":"object","properties":{"isbn":{"type":"string"}},"required":["isbn"]}`)}})
		var backupErr *restore.BackupError
		if _, err := restore.Into(context.Background(), target, &itemSource{items: conflicting}, restore.Hooks{}, zap.NewNop()); !errors.As(err, &backupErr) || backupErr.Line != 8 {
			t.Fatalf("restore with a schema the events do not match: %v", err)
		}
		// An item of no kind, which no backup line reads as: an error, not a panic.
		empty := append(backupOf(t, source, "")[:3], restore.Item{Line: 4})
		if _, err := restore.Into(context.Background(), target, &itemSource{items: empty}, restore.Hooks{}, zap.NewNop()); !errors.As(err, &backupErr) || backupErr.Line != 4 {
			t.Fatalf("restore with an empty item: %v", err)
		}
		if target.Durable() != 0 || len(readAll(t, target)) != 0 {
			t.Fatalf("%d events left after failed restores", target.Durable())
		}
		if first := write(t, target, candidate("/a", lib+"x", `{}`)); first[0].ID != 0 {
			t.Fatalf("the first write after failed restores got id %d", first[0].ID)
		}
	})
}

// TestRestoreCommitsLargeEventsInSmallerBatches: a commit of a restore
// holds at most some megabytes of records, whatever the events' size.
func TestRestoreCommitsLargeEventsInSmallerBatches(t *testing.T) {
	source := storetest.Start(t, storetest.Pebble.New(t))
	data := `{"text":"` + strings.Repeat("x", 1<<20-16) + `"}`
	for i := 0; i < 20; i++ {
		write(t, source, candidate("/large", lib+"x", data))
	}
	target := storetest.Start(t, storetest.Pebble.New(t))
	var progress []uint64
	if _, err := restore.Into(context.Background(), target, &itemSource{items: backupOf(t, source, "")}, restore.Hooks{Progress: func(n uint64) { progress = append(progress, n) }}, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if len(progress) < 3 || progress[0] > 10 {
		t.Fatalf("20 events of 1 MiB restored in batches ending at %v", progress)
	}
}

func TestCutOffRestoreIsUndoneAtStart(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		backend, err := open()
		if err != nil {
			t.Fatal(err)
		}
		_, r := event.Seal(nil, candidate("/a", lib+"x", `{}`), 0, time.Now(), []byte(event.ZeroHash))
		storetest.Commit(t, backend, store.Batch{Records: []store.Written{{Record: r, Subject: "/a", Type: lib + "x"}},
			Head: store.Head{Count: 1, LastHash: r.Hash(), LastTime: time.Now(), Commits: 1, Restoring: true}})
		if err := backend.Close(); err != nil {
			t.Fatal(err)
		}
		s := storetest.Start(t, open)
		if s.Durable() != 0 || len(readAll(t, s)) != 0 {
			t.Fatalf("%d events after a start on a cut-off restore", s.Durable())
		}
	})
}

func TestRestoreBeyondTheSchemaLimit(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		items := backupOf(t, libraryStore(t, b), "")
		events := len(items)
		const raw = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
		for i := range 3 {
			items = append(items, restore.Item{Line: len(items) + 1, Schema: &store.SchemaWritten{Type: fmt.Sprintf("io.example.numbered-%d", i), Raw: []byte(raw)}})
		}
		target := storetest.StartWith(t, b.New(t), store.Memory{MaxSchemas: 2})
		_, err := restore.Into(context.Background(), target, &itemSource{items: items}, restore.Hooks{}, zap.NewNop())
		var backupErr *restore.BackupError
		if !errors.As(err, &backupErr) || backupErr.Line != events+3 || backupErr.Detail != "too many event schemas" {
			t.Fatalf("restore of 3 schemas at a limit of 2: %v, want line %d: too many event schemas", err, events+3)
		}
		types, err := target.EventTypes()
		if err != nil || len(types) != 0 || target.Durable() != 0 || len(readAll(t, target)) != 0 {
			t.Fatalf("after the refused restore: %d events, types %v (%v)", target.Durable(), types, err)
		}
		// Two fit.
		restored, err := restore.Into(context.Background(), target, &itemSource{items: items[:events+2]}, restore.Hooks{}, zap.NewNop())
		if err != nil || restored.Schemas != 2 {
			t.Fatalf("restore of 2 schemas at a limit of 2: %+v %v", restored, err)
		}
		sch, err := schema.Compile([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := target.RegisterSchema(context.Background(), "io.example.numbered-2", sch); !errors.Is(err, store.ErrTooManySchemas) {
			t.Fatalf("registration after a restore up to the limit: %v", err)
		}
	})
}

// TestRestoreBuildsDataIndexes restores a backup with data index lines
// across several batches of events: the indexes are registered ready,
// their keys those of the events (verify checks each against them), and
// the writer keys what follows. Two lines of a name, or more than the
// limit, refuse the backup at their line.
func TestRestoreBuildsDataIndexes(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		const events = 25_000 // three batches of a restore
		source := storetest.Start(t, b.New(t))
		for i := 0; i < events; i += 1000 {
			var batch []event.Candidate
			for j := i; j < i+1000; j++ {
				data := fmt.Sprintf(`{"who":"/r/%d","tags":["t%d"]}`, j%10, j%3)
				batch = append(batch, candidate(fmt.Sprintf("/s/%d", j%50), fmt.Sprintf("io.x.kind-%d", j%2), data))
			}
			write(t, source, batch...)
		}
		items := backupOf(t, source, "")
		byWho := dataindex.Definition{Name: "byWho", Path: "/who"}
		byTag := dataindex.Definition{Name: "byTag", Path: "/tags", EventTypes: []string{"io.x.kind-1"}}
		withIndexes := append(slices.Clip(items), restore.Item{Line: events + 1, DataIndex: &byWho}, restore.Item{Line: events + 2, DataIndex: &byTag})

		// Refused: a name twice, and more indexes than the limit.
		var backupErr *restore.BackupError
		target := storetest.StartWith(t, b.New(t), store.Memory{MaxDataIndexes: 1})
		twice := append(slices.Clip(items), restore.Item{Line: events + 1, DataIndex: &byWho}, restore.Item{Line: events + 2, DataIndex: &byWho})
		if _, err := restore.Into(context.Background(), target, &itemSource{items: twice}, restore.Hooks{}, zap.NewNop()); !errors.As(err, &backupErr) || backupErr.Line != events+2 || !strings.Contains(backupErr.Detail, "appears twice") {
			t.Fatalf("restore of an index named twice: %v", err)
		}
		if _, err := restore.Into(context.Background(), target, &itemSource{items: withIndexes}, restore.Hooks{}, zap.NewNop()); !errors.As(err, &backupErr) || backupErr.Line != events+2 || backupErr.Detail != store.ErrTooManyDataIndexes.Error() {
			t.Fatalf("restore of 2 indexes at a limit of 1: %v", err)
		}
		if indexes, _, err := target.DataIndexes(); err != nil || len(indexes) != 0 || target.Durable() != 0 {
			t.Fatalf("after refused restores: %d events, indexes %v (%v)", target.Durable(), indexes, err)
		}

		open := b.New(t)
		target = storetest.Start(t, open)
		restored, err := restore.Into(context.Background(), target, &itemSource{items: withIndexes}, restore.Hooks{}, zap.NewNop())
		if err != nil || restored.DataIndexes != 2 || restored.Events != events {
			t.Fatalf("restore with data indexes: %+v, %v", restored, err)
		}
		indexes, _, err := target.DataIndexes()
		if err != nil || len(indexes) != 2 {
			t.Fatalf("restored indexes %v (%v)", indexes, err)
		}
		for _, x := range indexes {
			if !x.Ready() || x.From != events {
				t.Fatalf("restored index %+v is not ready from the restored events on", x)
			}
		}
		tag := indexes[0] // byTag, by name
		count := func() int {
			t.Helper()
			n := 0
			it := target.Scan(store.Scan{DataIndex: tag.ID, DataKeys: []dataindex.Lookup{{Key: dataindex.String("t1"), From: 0, To: math.MaxUint64}}, From: 0, To: math.MaxUint64})
			for it.Next() {
				n++
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			return n
		}
		keyed := (events + 4) / 6 // kind-1 and t1: j ≡ 1 mod 6
		if got, want := count(), keyed; got != want {
			t.Fatalf("%d events keyed t1 by %s, want %d", got, tag.Name, want)
		}
		write(t, target, candidate("/after", "io.x.kind-1", `{"tags":["t1"]}`))
		if got, want := count(), keyed+1; got != want {
			t.Fatalf("after a write: %d events keyed t1, want %d", got, want)
		}
		storetest.Close(t, target)
		backend, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer backend.Close()
		if n, err := storetest.Verify(context.Background(), backend); err != nil || n != events+1 {
			t.Fatalf("verify after the restore: %d events, %v", n, err)
		}
	})
}
