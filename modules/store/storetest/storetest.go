package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// Open returns a started store on Pebble in dir, on fs (the operating
// system's when nil), with a small block cache.
func Open(t testing.TB, dir string, fs vfs.FS) *store.Store {
	t.Helper()
	open := func() (store.Backend, error) {
		return pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{FS: fs, CacheSize: 8 << 20})
	}
	s := store.New(open, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Commit writes records, schemas and head to b directly, as the writer
// would; tests use it to build states the writer never makes.
func Commit(t testing.TB, b store.Backend, records []store.Written, head store.Head, schemas []store.SchemaWritten) {
	t.Helper()
	tx, err := b.Begin(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(records, head, schemas); err != nil {
		t.Fatal(err)
	}
}

// Close closes s and fails the test on an error.
func Close(t testing.TB, s *store.Store) {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Loop runs n goroutines that call fn with their number w and a count i
// from 0, again and again, until fn returns false or stop is called; stop
// waits for them.
func Loop(n int, fn func(w, i int) bool) (stop func()) {
	var wg sync.WaitGroup
	stopped := make(chan struct{})
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopped:
					return
				default:
				}
				if !fn(w, i) {
					return
				}
			}
		}()
	}
	return func() {
		close(stopped)
		wg.Wait()
	}
}
