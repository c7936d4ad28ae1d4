package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
)

// holding returns the files of dir that contain marker.
func holding(t *testing.T, dir string, marker []byte) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && bytes.Contains(b, marker) {
			found = append(found, e.Name())
		}
	}
	return found
}

// TestPurgeResumed: an erasure committed by a store that stopped before
// its Purge (kill -9 between the commit and the answer) is purged when
// the store opens again.
func TestPurgeResumed(t *testing.T) {
	// Letters that no record holds otherwise, so that compression leaves
	// the first copy in a block as it is.
	marker := []byte("QXVKMWPLHGYRSNJU")
	dir := t.TempDir()
	s := store.New(func() (store.Backend, error) { return Open(dir, zap.NewNop(), Options{}) }, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		data := fmt.Sprintf(`{"i":%d}`, i)
		if i == 137 {
			data = `{"m":"` + string(marker) + `"}`
		}
		if _, err := s.Write(context.Background(), []event.Candidate{{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(data)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, zap.NewNop(), Options{}) // the records in tables and blob files
	if err != nil {
		t.Fatal(err)
	}
	if files := holding(t, dir, marker); !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".blob") }) {
		t.Fatalf("the marker is in no blob file before the erasure, only in %v", files)
	}
	r, found, err := b.Record(137)
	if err != nil || !found {
		t.Fatalf("event 137: %v %v", found, err)
	}
	erased, sum, err := event.Erase(r, event.ErasedData(200, "2026-11-29T12:00:00.000000001Z"), jsonscan.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	head, err := b.Head()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := b.Begin(context.Background(), head.Count)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(store.Batch{Erased: []store.ErasedRecord{{Record: erased, DataSum: sum}}, Head: head}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // stopped before Purge
		t.Fatal(err)
	}
	if len(holding(t, dir, marker)) == 0 {
		t.Fatal("the erased bytes are in no file before the purge: the test proves nothing")
	}

	b, err = Open(dir, zap.NewNop(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if files := holding(t, dir, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are in %v once the store opened again", files)
	}
	if kept, found, err := b.KeptDataSum(137); err != nil || !found || kept != sum {
		t.Fatalf("the kept digest: %v %v", found, err)
	}
	if _, closer, err := b.db.Get(purgeKey); !errors.Is(err, pebble.ErrNotFound) {
		if closer != nil {
			closer.Close()
		}
		t.Fatalf("the purge ranges are still pending: %v", err)
	}
}

// TestNoReuse: a WAL file Pebble would reuse is removed and the new one
// created empty, so that no obsolete file Purge zeroes becomes a live WAL.
func TestNoReuse(t *testing.T) {
	fs := noReuseFS{FS: vfs.NewMem()}
	f, err := fs.Create("000004.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("old records")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g, err := fs.ReuseForWrite("000004.log", "000009.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if info, err := g.Stat(); err != nil || info.Size() != 0 {
		t.Fatalf("the new WAL: %v, %v", info, err)
	}
	if _, err := fs.Stat("000004.log"); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("the reused file is still there: %v", err)
	}
}

// TestPurgeLeftToTheNext: a Purge whose context ended leaves what it did
// not finish to the next Purge.
func TestPurgeLeftToTheNext(t *testing.T) {
	marker := []byte("QXVKMWPLHGYRSNJU")
	dir := t.TempDir()
	b, err := Open(dir, zap.NewNop(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var head store.Head
	head.LastHash = event.ZeroHash
	c := event.Candidate{Source: "https://x", Subject: "/a", Type: "io.example.thing", Data: []byte(`{"m":"` + string(marker) + `"}`)}
	_, r := event.Seal(nil, c, 0, time.Now(), []byte(head.LastHash))
	head = store.Head{Count: 1, LastHash: r.Hash(), LastTime: time.Now()}
	commit := func(batch store.Batch) {
		t.Helper()
		tx, err := b.Begin(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(batch); err != nil {
			t.Fatal(err)
		}
	}
	commit(store.Batch{Records: []store.Written{{Record: r, Subject: c.Subject, Type: c.Type}}, Head: head})
	erased, sum, err := event.Erase(r, event.ErasedData(1, "2026-11-29T12:00:00.000000001Z"), jsonscan.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	commit(store.Batch{Erased: []store.ErasedRecord{{Record: erased, DataSum: sum}}, Head: head})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Purge(ctx); err != nil {
		t.Logf("the Purge of an ended context: %v", err)
		b.purge.pending.Lock()
		pending := len(b.purge.pending.ranges)
		b.purge.pending.Unlock()
		if pending == 0 {
			t.Fatalf("Purge failed (%v) and left nothing to the next", err)
		}
		if err := b.Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if files := holding(t, dir, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are in %v", files)
	}
}
