package datadir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestPersistentDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "data")
	d := New(path, false)
	if err := d.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("directory not created 0700: %v %v", info, err)
	}
	id := d.ServiceID()
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("service id %q: %v", id, err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("persistent directory removed on close: %v", err)
	}

	again := New(path, false)
	if err := again.Open(context.Background()); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer again.Close(context.Background())
	if again.ServiceID() != id {
		t.Fatalf("service id changed across restarts: %s then %s", id, again.ServiceID())
	}
}

func TestExclusiveLock(t *testing.T) {
	path := t.TempDir()
	first := New(path, false)
	if err := first.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := New(path, false)
	if err := second.Open(context.Background()); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := second.Open(context.Background()); err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	second.Close(context.Background())
}

func TestTemporaryDirectory(t *testing.T) {
	d := New("", true)
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(d.Path()), "eventstore-") || filepath.Dir(d.Path()) != filepath.Clean(os.TempDir()) {
		t.Fatalf("temporary directory %q is not eventstore-* under %s", d.Path(), os.TempDir())
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path()); !os.IsNotExist(err) {
		t.Fatalf("temporary directory still exists after Close: %v", err)
	}
}

func TestCorruptServiceID(t *testing.T) {
	path := t.TempDir()
	if err := os.WriteFile(filepath.Join(path, serviceIDFile), []byte("not-a-uuid"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := New(path, false)
	if err := d.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "service id") {
		t.Fatalf("Open with a corrupt service id: %v", err)
	}
	// The failed Open released its lock.
	if err := New(path, false).Open(context.Background()); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("lock kept after a failed Open: %v", err)
	}
}

func TestFormatVersion(t *testing.T) {
	path := t.TempDir()
	d := New(path, false)
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := d.FormatVersion(); v != 0 {
		t.Fatalf("new directory has format version %d, want 0 (none recorded)", v)
	}
	if err := d.SetFormatVersion(7); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(filepath.Join(path, "format-version")); err != nil || string(raw) != "7\n" {
		t.Fatalf("format-version file: %q %v", raw, err)
	}
	d.Close(context.Background())

	again := New(path, false)
	if err := again.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := again.FormatVersion(); v != 7 {
		t.Fatalf("format version %d after reopening, want 7", v)
	}
	again.Close(context.Background())

	for _, bad := range []string{"", "x", "0", "-2", "1.5"} {
		if err := os.WriteFile(filepath.Join(path, "format-version"), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := New(path, false).Open(context.Background()); err == nil || !strings.Contains(err.Error(), "format version") {
			t.Fatalf("Open with format version %q: %v", bad, err)
		}
	}
}
