package bench

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

func TestDeliveryToken(t *testing.T) {
	for _, c := range []struct {
		line, token string
		ok          bool
	}{
		{`{"type":"delivery","payload":{"delivery":"eyJzIjoiYiJ9","attempt":1,"partition":0,"event":{}}}` + "\n", "eyJzIjoiYiJ9", true},
		{`{"type":"heartbeat","payload":{}}` + "\n", "", false},
		{`{"type":"assignment","payload":{"partitions":[0]}}` + "\n", "", false},
		{`{"type":"delivery","payload":{"delivery":"cut`, "", false},
	} {
		if token, ok := deliveryToken([]byte(c.line)); token != c.token || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.line, token, ok, c.token, c.ok)
		}
	}
	var body struct {
		Subscription string   `json:"subscription"`
		Deliveries   []string `json:"deliveries"`
	}
	if err := json.Unmarshal(ackBody("billing", []string{"a", "b"}), &body); err != nil || body.Subscription != "billing" || len(body.Deliveries) != 2 {
		t.Fatalf("ack body: %+v %v", body, err)
	}
}

// TestGathererBatches gathers 2,500 tokens: two full batches go at once,
// the rest 5 ms after its first token, all in order; after stop, a batch
// gathering is not sent.
func TestGathererBatches(t *testing.T) {
	out := make(chan []string, 4)
	g := &gatherer{out: out}
	for i := range 2500 {
		g.add(strconv.Itoa(i))
	}
	next := 0
	for _, want := range []int{ackBatch, ackBatch, 500} {
		select {
		case b := <-out:
			if len(b) != want {
				t.Fatalf("a batch of %d, want %d", len(b), want)
			}
			for _, tok := range b {
				if tok != strconv.Itoa(next) {
					t.Fatalf("token %s, want %d", tok, next)
				}
				next++
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no batch of %d", want)
		}
	}
	g.add("late")
	g.stop()
	select {
	case b := <-out:
		t.Fatalf("a batch after stop: %v", b)
	case <-time.After(50 * time.Millisecond):
	}
}
