package subscriptions

import (
	"testing"

	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestOwnersWokenWithoutCommitsOfEvents: the commits of a subscription's
// state (a poll's deliveries, a reset) wake no observer or consume loop
// (store.Store.Changed); the consumers whose partitions they gave
// something to do are woken (Consumer.Woken), and only those.
func TestOwnersWokenWithoutCommitsOfEvents(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	orders(t, s, 20)
	m := started(t, s, &clock{now: t0})
	if _, err := m.Create(ctx, definition(2, 100)); err != nil {
		t.Fatal(err)
	}
	w1, _ := m.Connect(ctx, "billing", "w1")
	w2, _ := m.Connect(ctx, "billing", "w2")
	drain := func(c *Consumer) bool {
		select {
		case <-c.Woken():
			return true
		default:
			return false
		}
	}
	drain(w1)
	drain(w2)

	changed := s.Changed()
	mine := poll(t, m, w1) // delivers w2's events too, into its read-ahead
	if len(mine) == 0 {
		t.Fatal("w1 was delivered nothing")
	}
	select {
	case <-changed:
		t.Fatal("a poll's commit of state alone woke every observer and consume loop")
	default:
	}
	if !drain(w2) {
		t.Fatal("w2 was not woken for the deliveries w1's poll made for it")
	}
	if drain(w1) {
		t.Fatal("w1 was woken by its own poll")
	}
	if theirs := poll(t, m, w2); len(theirs) == 0 {
		t.Fatal("w2 was woken for nothing")
	}

	if _, err := m.Reset(ctx, "billing", Start{Kind: FromBeginning}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Fatal("a reset woke every observer and consume loop")
	default:
	}
	if !drain(w1) || !drain(w2) {
		t.Fatal("a reset did not wake the consumers")
	}
}
