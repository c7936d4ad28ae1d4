package pebblestore

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
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
	want := "data directory has format version 2, newer than format version 1 of this binary: run a release that supports format version 2"
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
