package datadir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/uuid"
)

// File names inside the data directory.
const (
	lockFile      = "eventstore.lock"
	serviceIDFile = "service-id"
	formatFile    = "format-version"
)

// ErrLocked reports that another process holds the data directory.
var ErrLocked = errors.New("data directory is in use by another process")

// Dir is the data directory of the running process.
type Dir struct {
	path      string
	temporary bool
	lock      *os.File
	serviceID string
	format    int
}

// New returns a Dir for path, or for a new temporary directory when
// temporary is set. Nothing happens on disk until Open.
func New(path string, temporary bool) *Dir {
	return &Dir{path: path, temporary: temporary}
}

// Open creates the directory if needed, locks it exclusively, reads or
// creates its service id, and reads its format version.
func (d *Dir) Open(context.Context) error {
	if d.temporary {
		path, err := os.MkdirTemp("", "eventstore-*")
		if err != nil {
			return fmt.Errorf("create temporary data directory: %w", err)
		}
		d.path = path
	} else if err := os.MkdirAll(d.path, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(d.path, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open lock of data directory %s: %w", d.path, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", d.path, ErrLocked)
		}
		return fmt.Errorf("lock data directory %s: %w", d.path, err)
	}
	d.lock = lock
	if d.serviceID, err = loadServiceID(d.path); err != nil {
		d.release()
		return err
	}
	if d.format, err = loadFormat(d.path); err != nil {
		d.release()
		return err
	}
	return nil
}

// Close releases the lock and removes a temporary directory.
func (d *Dir) Close(context.Context) error {
	d.release()
	if d.temporary {
		if err := os.RemoveAll(d.path); err != nil {
			return fmt.Errorf("remove temporary data directory: %w", err)
		}
	}
	return nil
}

// RemoveTemporary removes a temporary directory, best effort: it is the
// cleanup after a shutdown that timed out.
func (d *Dir) RemoveTemporary() {
	if d.temporary && d.path != "" {
		_ = os.RemoveAll(d.path)
	}
}

func (d *Dir) release() {
	if d.lock != nil {
		d.lock.Close() // closing the descriptor releases the flock
		d.lock = nil
	}
}

// Path returns the directory's path; for a temporary directory it is known
// once Open returned.
func (d *Dir) Path() string { return d.path }

// Temporary reports whether the directory is removed on shutdown.
func (d *Dir) Temporary() bool { return d.temporary }

// ServiceID returns the UUID created with the directory, stable across restarts.
func (d *Dir) ServiceID() string { return d.serviceID }

// FormatVersion returns the format version of the data the directory
// holds, 0 when it records none: a new directory, or one created before
// format versions were recorded.
func (d *Dir) FormatVersion() int { return d.format }

// SetFormatVersion records the format version of the data the directory
// holds, durably.
func (d *Dir) SetFormatVersion(v int) error {
	if err := writeFileDurably(filepath.Join(d.path, formatFile), []byte(strconv.Itoa(v)+"\n")); err != nil {
		return fmt.Errorf("record format version: %w", err)
	}
	d.format = v
	return nil
}

// loadFormat reads the format version of dir, 0 when it records none.
func loadFormat(dir string) (int, error) {
	path := filepath.Join(dir, formatFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read format version: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || v < 1 {
		return 0, fmt.Errorf("read format version %s: %q is not a positive number", path, raw)
	}
	return v, nil
}

// loadServiceID reads the service id of dir, creating it durably (write,
// sync, rename, sync the directory) when the directory is new.
func loadServiceID(dir string) (string, error) {
	path := filepath.Join(dir, serviceIDFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		id, err := uuid.Parse(strings.TrimSpace(string(raw)))
		if err != nil {
			return "", fmt.Errorf("read service id %s: %w", path, err)
		}
		return id.String(), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read service id: %w", err)
	}
	id := uuid.NewString()
	if err := writeFileDurably(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("create service id: %w", err)
	}
	return id, nil
}

func writeFileDurably(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
