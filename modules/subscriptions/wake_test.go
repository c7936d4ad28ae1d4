package subscriptions

import (
	"testing"

	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestCommitsWakeTheirSubscriptionOnly: the commits of a subscription's
// state (a poll's deliveries, a settle, a reset) wake no observer and no
// consume loop of another subscription (store.Store.Changed stays open);
// they wake the consumers of their own (Consumer.Committed).
func TestCommitsWakeTheirSubscriptionOnly(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	orders(t, s, 20)
	m := started(t, s, &clock{now: t0})
	if _, err := m.Create(ctx, definition(2, 100)); err != nil {
		t.Fatal(err)
	}
	other := definition(1, 100)
	other.Name = "shipping"
	if _, err := m.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	w1, _ := m.Connect(ctx, "billing", "w1")
	w2, _ := m.Connect(ctx, "billing", "w2")
	bystander, _ := m.Connect(ctx, "shipping", "s1")
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		name string
		do   func()
	}{
		{"a poll", func() {
			if len(poll(t, m, w1)) == 0 {
				t.Fatal("w1 was delivered nothing")
			}
		}},
		{"a settle", func() { ack(t, m, poll(t, m, w2)...) }},
		{"a reset", func() {
			if _, err := m.Reset(ctx, "billing", Start{Kind: FromBeginning}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		changed, own, others := s.Changed(), w2.Committed(), bystander.Committed()
		step.do()
		if closed(changed) {
			t.Errorf("%s woke every observer and consume loop", step.name)
		}
		if !closed(own) {
			t.Errorf("%s did not wake the consumers of its subscription", step.name)
		}
		if closed(others) {
			t.Errorf("%s woke the consumers of another subscription", step.name)
		}
	}
}
