package subscriptions

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

// TestKeysKeepTheirFormat holds the keys of stored records to the format
// they were first written in (fmt's zero-padded decimals): a store written
// by an older release is read by the keys this one makes.
func TestKeysKeepTheirFormat(t *testing.T) {
	for _, p := range []int{0, 7, 15, 999, 9999, 10000, 123456} {
		for _, id := range []uint64{0, 1, 42, 1 << 40, math.MaxUint64} {
			if got, want := deliveryKey("billing", p, id), fmt.Sprintf("%s/%04d/%020d", "billing", p, id); got != want {
				t.Fatalf("deliveryKey = %q, want %q", got, want)
			}
			if got, want := parkedKey("bill/ing", id), fmt.Sprintf("%s/%020d", "bill/ing", id); got != want {
				t.Fatalf("parkedKey = %q, want %q", got, want)
			}
		}
		if got, want := partitionKey("billing", p), fmt.Sprintf("%s/%04d", "billing", p); got != want {
			t.Fatalf("partitionKey = %q, want %q", got, want)
		}
	}
}

// TestDeliveryValuesMatchJSON holds a delivery's stored value to
// what json.Marshal made of it.
func TestDeliveryValuesMatchJSON(t *testing.T) {
	for _, r := range []deliveryRecord{{}, {Attempt: 1}, {Attempt: 12}, {Settled: true}, {Attempt: 3, Settled: true}, {Attempt: -1}} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.value(); string(got) != string(want) {
			t.Fatalf("%+v: %s, want %s", r, got, want)
		}
	}
}
