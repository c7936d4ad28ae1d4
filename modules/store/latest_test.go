package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// countingBackend counts the lookups of latest ids that reach storage.
type countingBackend struct {
	store.Backend
	lookups atomic.Int64
}

func (b *countingBackend) LatestID(subject, eventType string, maxID uint64) (uint64, bool, error) {
	b.lookups.Add(1)
	return b.Backend.LatestID(subject, eventType, maxID)
}

func TestWriterKnowsLatestIDsWithoutStorage(t *testing.T) {
	dir := t.TempDir()
	var backend *countingBackend
	start := func() *store.Store {
		s := store.New(func() (store.Backend, error) {
			b, err := pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{})
			backend = &countingBackend{Backend: b}
			return backend, err
		}, zap.NewNop(), nil, store.Memory{})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	onID := func(id uint64) []store.Precondition {
		return []store.Precondition{{Kind: store.SubjectOnEventID, Subject: "/a", EventID: id}}
	}
	pristine := []store.Precondition{{Kind: store.SubjectPristine, Subject: "/a"}}

	s := start()
	// A new subject: one lookup says it has no event, then the writer knows.
	last := write(t, s, candidate("/a", "io.example.x", `{}`))[0].ID
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{}`)}, pristine); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("pristine on a populated subject: %v", err)
	}
	for i := 0; i < 100; i++ {
		records, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{}`)}, onID(last))
		if err != nil {
			t.Fatalf("write %d on the id last written: %v", i, err)
		}
		last = records[0].ID
	}
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{}`)}, onID(last-1)); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("a stale id: %v", err)
	}
	if n := backend.lookups.Load(); n != 0 {
		t.Fatalf("the writer looked up latest ids in storage %d times for a subject it wrote", n)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// After a restart the writer asks storage once, then knows again.
	s = start()
	defer s.Close(context.Background())
	for i := 0; i < 10; i++ {
		records, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{}`)}, onID(last))
		if err != nil {
			t.Fatalf("write %d after the restart: %v", i, err)
		}
		last = records[0].ID
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Write(context.Background(), []event.Candidate{candidate("/b", "io.example.x", `{}`)},
			[]store.Precondition{{Kind: store.SubjectPopulated, Subject: "/b"}}); !errors.Is(err, store.ErrPreconditionFailed) {
			t.Fatalf("populated on an empty subject: %v", err)
		}
	}
	if n := backend.lookups.Load(); n != 2 {
		t.Fatalf("%d lookups in storage after the restart, want 2 (one for /a, one for /b)", n)
	}
}
