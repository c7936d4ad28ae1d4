package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestViewsTakeTurns: the views of two writes' evaluations share the
// slots for heavy evaluations; a view holds at most one, takes it once
// however often it waits, and a view of another kind never waits.
func TestViewsTakeTurns(t *testing.T) {
	slots := make(chan struct{}, 1)
	a, b := &View{turn: &turn{slots: slots}}, &View{turn: &turn{slots: slots}}
	ctx := context.Background()
	if err := a.WaitTurn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitTurn(ctx); err != nil || len(slots) != 1 {
		t.Fatalf("a second wait of the view holding the slot: %v, %d slots taken", err, len(slots))
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.WaitTurn(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait while the other view holds the only slot: %v", err)
	}
	if err := (&View{}).WaitTurn(short); err != nil {
		t.Fatalf("a view of a read: %v", err)
	}
	a.turn.release()
	a.turn.release() // once only
	if err := b.WaitTurn(ctx); err != nil || len(slots) != 1 {
		t.Fatalf("a wait after the release: %v, %d slots taken", err, len(slots))
	}
}
