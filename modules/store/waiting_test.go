package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// waitingBackend is a backend whose commits, while stall is set, first
// wait 250 ms for their database (Waiting), as the PostgreSQL backend's do
// when it looks up the outcome of a commit whose connection broke.
type waitingBackend struct {
	store.Backend
	stall, wait atomic.Bool
}

func (b *waitingBackend) Waiting() bool { return b.wait.Load() }

func (b *waitingBackend) Begin(ctx context.Context, known uint64) (store.Tx, error) {
	tx, err := b.Backend.Begin(ctx, known)
	if err != nil {
		return nil, err
	}
	return &waitingTx{Tx: tx, b: b}, nil
}

type waitingTx struct {
	store.Tx
	b *waitingBackend
}

func (tx *waitingTx) Commit(batch store.Batch) error {
	if tx.b.stall.Load() {
		tx.b.wait.Store(true)
		time.Sleep(250 * time.Millisecond) // the refusing goroutine waits on the queue meanwhile
		tx.b.wait.Store(false)
	}
	return tx.Tx.Commit(batch)
}

// TestWriteRightAfterAWaitIsCommitted has commits wait for the database
// and writes again as soon as each is answered, round after round: a write
// during a wait gets ErrUnavailable, and the one right after it is
// committed, though the goroutine that refuses the queue during waits
// may take it from the queue before it sees that the wait ended.
func TestWriteRightAfterAWaitIsCommitted(t *testing.T) {
	ctx := context.Background()
	b := &waitingBackend{}
	open := storetest.PebbleAt(t.TempDir(), nil)
	s := store.New(func() (store.Backend, error) {
		inner, err := open()
		if err != nil {
			return nil, err
		}
		b.Backend = inner
		return b, nil
	}, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	one := []event.Candidate{storetest.Candidate("/waits", "io.example.waited", `{}`)}
	const rounds = 12
	for round := range rounds {
		b.stall.Store(true)
		stalled := make(chan error, 1)
		go func() {
			_, err := s.Write(ctx, one, nil)
			stalled <- err
		}()
		for !b.Waiting() {
			time.Sleep(time.Millisecond)
		}
		b.stall.Store(false)
		if _, err := s.Write(ctx, one, nil); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("round %d: a write during the wait: %v, want ErrUnavailable", round, err)
		}
		if err := <-stalled; err != nil {
			t.Fatalf("round %d: the write that waited: %v", round, err)
		}
		if _, err := s.Write(ctx, one, nil); err != nil {
			t.Fatalf("round %d: a write right after the wait: %v", round, err)
		}
	}
	if n := s.Durable(); n != 2*rounds {
		t.Fatalf("%d events stored, want %d", n, 2*rounds)
	}
}
