package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/eventstore-service/eventstore/modules/store"
)

// Commit commits b to backend directly, as the writer would; tests use it
// to build states the writer never makes.
func Commit(t testing.TB, backend store.Backend, b store.Batch) {
	t.Helper()
	tx, err := backend.Begin(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b); err != nil {
		t.Fatal(err)
	}
}

// SchemaRecords returns the records of feature state that hold schemas in
// an empty store, versions 1, 2, … in this order: a Batch of them needs a
// Head whose States is len(schemas).
func SchemaRecords(schemas []store.SchemaWritten) []store.StateRecord {
	out := make([]store.StateRecord, len(schemas))
	for i, sw := range schemas {
		out[i] = store.StateRecord{Space: store.SchemaSpace, Key: sw.Type, Value: sw.Raw, Version: uint64(i + 1)}
	}
	return out
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
