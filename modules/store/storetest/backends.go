package storetest

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// Backend makes storage of one kind for tests, so that one table of cases
// runs on every backend.
type Backend struct {
	// Name names the backend in the names of subtests.
	Name string
	// New returns an Opener of new, empty storage for t; every call of the
	// Opener opens the same storage again, as a restart does.
	New func(t testing.TB) store.Opener
}

// Pebble is the embedded backend, in a temporary directory of the test.
var Pebble = Backend{Name: "pebble", New: func(t testing.TB) store.Opener {
	return PebbleAt(t.TempDir(), nil)
}}

// PebbleAt returns an Opener of the embedded backend in dir, on fs (the
// operating system's when nil), with a small block cache.
func PebbleAt(dir string, fs vfs.FS) store.Opener {
	return func() (store.Backend, error) {
		return pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{FS: fs, CacheSize: 8 << 20})
	}
}

// Postgres is the PostgreSQL backend, each test on a new database of the
// cluster pg; a test skips when PostgreSQL is not installed.
func Postgres(pg *pgtest.Shared) Backend {
	return Backend{Name: "postgres", New: func(t testing.TB) store.Opener {
		url := pg.Database(t)
		return func() (store.Backend, error) {
			return pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{MaxConnections: 8})
		}
	}}
}

// Each runs fn as a subtest on Pebble and on PostgreSQL (cluster pg).
func Each(t *testing.T, pg *pgtest.Shared, fn func(t *testing.T, b Backend)) {
	for _, b := range []Backend{Pebble, Postgres(pg)} {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// EachB runs fn as a sub-benchmark on Pebble and on PostgreSQL (cluster pg).
func EachB(b *testing.B, pg *pgtest.Shared, fn func(b *testing.B, be Backend)) {
	for _, be := range []Backend{Pebble, Postgres(pg)} {
		b.Run(be.Name, func(b *testing.B) { fn(b, be) })
	}
}

// Start returns a store started on open, closed when the test ends (unless
// the test closed it).
func Start(t testing.TB, open store.Opener) *store.Store {
	t.Helper()
	return StartWith(t, open, store.Memory{})
}

// StartWith is Start with the store's caches and schemas bounded by mem.
func StartWith(t testing.TB, open store.Opener, mem store.Memory) *store.Store {
	t.Helper()
	s := store.New(open, zap.NewNop(), nil, mem)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// Verify runs store.Verify on the whole of b.
func Verify(ctx context.Context, b store.Backend) (uint64, error) {
	return verify.Verify(ctx, b, verify.Options{})
}
