package download

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRegistryTicketsAreSingleUseAndBounded(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	g := NewRegistry(Options{Max: 2, Now: func() time.Time { return now }})
	a, _, err := g.Create(Request{Route: "/r", Filename: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := g.Create(Request{Route: "/r", Filename: "b"})
	if err != nil || a == b {
		t.Fatalf("second ticket: %v (%q, %q)", err, a, b)
	}
	if _, _, err := g.Create(Request{Route: "/r"}); !errors.Is(err, ErrTooMany) {
		t.Errorf("a third pending download: %v", err)
	}
	ctx, d, err := g.Take(context.Background(), a)
	if err != nil || d.Request().Filename != "a" {
		t.Fatalf("take: %v", err)
	}
	if _, _, err := g.Take(context.Background(), a); !errors.Is(err, ErrUnknown) {
		t.Errorf("second take: %v", err)
	}
	if _, err := g.Cancel(a); err != nil || !errors.Is(context.Cause(ctx), ErrCancelled) {
		t.Errorf("cancel: %v, cause %v", err, context.Cause(ctx))
	}
	d.End(now, true, "")
	if s, _ := g.Status(a); s.State != Cancelled {
		t.Errorf("state %s", s.State)
	}
	if _, _, err := g.Create(Request{Route: "/r"}); err != nil { // the ended one makes room
		t.Errorf("after one ended: %v", err)
	}
	if _, err := g.Status(a); !errors.Is(err, ErrUnknown) {
		t.Errorf("the evicted download: %v", err)
	}
	now = now.Add(DefaultOptions.Unused + time.Second)
	if s, _ := g.Status(b); s.State != Expired {
		t.Errorf("an unused ticket after its minute: %s", s.State)
	}
	if _, _, err := g.Take(context.Background(), b); !errors.Is(err, ErrUnknown) {
		t.Errorf("take of an expired ticket: %v", err)
	}
}
