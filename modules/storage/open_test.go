package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/datadir"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// openDir opens the data directory at path and closes it when the test ends.
func openDir(t *testing.T, path string) *datadir.Dir {
	t.Helper()
	dir := datadir.New(path, false)
	if err := dir.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close(context.Background()) })
	return dir
}

// golden returns a copy of the golden data directory of the first release.
func golden(t *testing.T) string { return goldenOf(t, "golden-v1") }

// goldenOf returns a copy of the data directory of testdata/name.
func goldenOf(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(path, os.DirFS(filepath.Join("testdata", name, "data"))); err != nil {
		t.Fatal(err)
	}
	return path
}

func formatFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(path, "format-version"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(raw)
}

// openAndClose opens the backend of dir with opts and closes it.
func openAndClose(t *testing.T, dir *datadir.Dir, opts pebblestore.Options) {
	t.Helper()
	b, err := OpenBackend(dir, zap.NewNop(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNewDirectoryRecordsTheFormatVersion(t *testing.T) {
	path := t.TempDir()
	openAndClose(t, openDir(t, path), pebblestore.Options{})
	if got := formatFile(t, path); got != "2\n" {
		t.Fatalf("format-version of a new directory: %q", got)
	}
}

// TestGoldenDirectory opens a copy of the golden directory of the first
// release: read-only it opens as it is, and the first writable open
// migrates it to format version 2 and records that; the store recovers,
// verifies and holds its 28 events and its two schemas, in their
// registration order.
func TestGoldenDirectory(t *testing.T) {
	path := golden(t)
	dir := openDir(t, path)
	if dir.FormatVersion() != 0 {
		t.Fatalf("golden directory records format version %d", dir.FormatVersion())
	}
	openAndClose(t, dir, pebblestore.Options{ReadOnly: true})
	if got := formatFile(t, path); got != "" {
		t.Fatalf("a read-only open recorded format version %q", got)
	}

	s := store.New(func() (store.Backend, error) { return OpenBackend(dir, zap.NewNop(), pebblestore.Options{}) }, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := formatFile(t, path); got != "2\n" || dir.FormatVersion() != 2 {
		t.Fatalf("format version after the first open: file %q, %d", got, dir.FormatVersion())
	}
	if s.Durable() != 28 {
		t.Fatalf("golden store has %d events, want 28", s.Durable())
	}
	var types []string
	for _, sw := range s.View().Schemas() {
		types = append(types, sw.Type)
	}
	if want := []string{"io.example.library.book-acquired", "io.example.library.reader-warned"}; !slices.Equal(types, want) {
		t.Fatalf("schemas after the migration: %v, want %v", types, want)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	b, err := OpenBackend(dir, zap.NewNop(), pebblestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, err := verify.Verify(context.Background(), b, verify.Options{}); err != nil || n != 28 {
		t.Fatalf("verify: %d events, %v", n, err)
	}
}

// TestGoldenDirectoryOfFormat2 opens a copy of the golden directory of
// format version 2: it verifies read-only and starts with its 28 events and
// its two schemas, in their registration order.
func TestGoldenDirectoryOfFormat2(t *testing.T) {
	path := goldenOf(t, "golden-v2")
	dir := openDir(t, path)
	if dir.FormatVersion() != 2 {
		t.Fatalf("golden directory records format version %d", dir.FormatVersion())
	}
	b, err := OpenBackend(dir, zap.NewNop(), pebblestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := verify.Verify(context.Background(), b, verify.Options{}); err != nil || n != 28 {
		t.Fatalf("verify: %d events, %v", n, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	s := store.New(func() (store.Backend, error) { return OpenBackend(dir, zap.NewNop(), pebblestore.Options{}) }, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var types []string
	for _, sw := range s.View().Schemas() {
		types = append(types, sw.Type)
	}
	if want := []string{"io.example.library.book-acquired", "io.example.library.reader-warned"}; s.Durable() != 28 || !slices.Equal(types, want) {
		t.Fatalf("%d events, schemas %v; want 28 and %v", s.Durable(), types, want)
	}
}

func TestNewerFormatVersionRefused(t *testing.T) {
	path := golden(t)
	if err := os.WriteFile(filepath.Join(path, "format-version"), []byte("3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := openDir(t, path)
	for _, readOnly := range []bool{false, true} {
		_, err := OpenBackend(dir, zap.NewNop(), pebblestore.Options{ReadOnly: readOnly})
		var formatErr *pebblestore.FormatError
		if !errors.As(err, &formatErr) || !strings.Contains(err.Error(), "format version 3, newer than format version 2") {
			t.Fatalf("open (read-only %v) of format version 3: %v", readOnly, err)
		}
	}
	if got := formatFile(t, path); got != "3\n" {
		t.Fatalf("refused open changed format-version to %q", got)
	}
}

func TestReadOnlyOpenNeedsAStore(t *testing.T) {
	path := t.TempDir()
	if _, err := OpenBackend(openDir(t, path), zap.NewNop(), pebblestore.Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Fatalf("read-only open of an empty directory: %v", err)
	}
	if got := formatFile(t, path); got != "" {
		t.Fatalf("read-only open recorded format version %q", got)
	}
}
