package pebblestore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/store"
)

func TestNewStoreHasThePinnedPebbleFormat(t *testing.T) {
	b, err := Open("data", zap.NewNop(), Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// The version the first release created its stores with, whatever
	// pebble.FormatNewest is now.
	if got := b.db.FormatMajorVersion(); got != pebble.FormatValueSeparation || got != pebbleFormat(FormatVersion) {
		t.Fatalf("new store has Pebble format %d, want %d", got, pebble.FormatValueSeparation)
	}
}

func TestFormatVersionsRefused(t *testing.T) {
	fs := vfs.NewMem()
	var formatErr *FormatError
	_, err := Open("data", zap.NewNop(), Options{FS: fs, Format: FormatVersion + 1})
	if !errors.As(err, &formatErr) || formatErr.Version != FormatVersion+1 {
		t.Fatalf("open of a newer format version: %v", err)
	}
	want := "data directory has format version 3, newer than format version 2 of this binary: run a release that supports format version 3"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if names, _ := fs.List(""); len(names) != 0 {
		t.Fatalf("refused open left files: %v", names)
	}
	if _, err := Open("data", zap.NewNop(), Options{FS: fs, Format: -1}); err == nil || !strings.Contains(err.Error(), "invalid format version -1") {
		t.Fatalf("open of format version -1: %v", err)
	}
}

// TestSchemasMoveIntoState writes schemas as format version 1 kept them
// (one from before the order was kept, two registered out of type order),
// then checks that a read-only open reads them as they are and that a
// writable open moves them into feature state in registration order, once.
func TestSchemasMoveIntoState(t *testing.T) {
	fs := vfs.NewMem()
	db, err := pebble.Open("data", &pebble.Options{FS: fs, FormatMajorVersion: pebbleFormat(1)})
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, headSizeV1) // no events: count 0, the zero hash, time 0
	for _, kv := range [][2]string{
		{"s" + "io.example.z", `{"type":"object"}`},
		{"s" + "io.example.b", `{"type":"string"}`},
		{"s" + "io.example.a", `{"type":"number"}`},
		{string(appendID([]byte{spaceOrderV1}, 0)), "io.example.z"},
		{string(appendID([]byte{spaceOrderV1}, 1)), "io.example.b"},
		{string(headKey), string(head)},
	} {
		if err := db.Set([]byte(kv[0]), []byte(kv[1]), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"io.example.a:1", "io.example.z:2", "io.example.b:3"}
	states := func(b *Backend) []string {
		t.Helper()
		var out []string
		it := b.States(store.SchemaSpace, "")
		for it.Next() {
			out = append(out, fmt.Sprintf("%s:%d", it.Record().Key, it.Record().Version))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(out, func(x, y string) int { return strings.Compare(x[strings.Index(x, ":"):], y[strings.Index(y, ":"):]) })
		return out
	}
	ro, err := Open("data", zap.NewNop(), Options{FS: fs, Format: 1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := states(ro); !slices.Equal(got, want) {
		t.Fatalf("read-only open of format version 1: %v, want %v", got, want)
	}
	if r, found, err := ro.State(store.SchemaSpace, "io.example.b"); err != nil || !found || string(r.Value) != `{"type":"string"}` {
		t.Fatalf("read-only State: %+v %v %v", r, found, err)
	}
	must(t, ro.Close())
	for range 2 { // the second open finds the store moved already
		b, err := Open("data", zap.NewNop(), Options{FS: fs, Format: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := states(b); !slices.Equal(got, want) {
			t.Fatalf("migrated schemas: %v, want %v", got, want)
		}
		if h, err := b.Head(); err != nil || h.States != 3 {
			t.Fatalf("head after the migration: %+v %v", h, err)
		}
		if n := countKeys(t, b.db, spaceSchemaV1) + countKeys(t, b.db, spaceOrderV1); n != 0 {
			t.Fatalf("%d keys of format version 1 left", n)
		}
		must(t, b.Close())
	}
}

func countKeys(t *testing.T, db *pebble.DB, space byte) int {
	t.Helper()
	n := 0
	if err := scan(db, space, func(_, _ []byte) { n++ }); err != nil {
		t.Fatal(err)
	}
	return n
}
