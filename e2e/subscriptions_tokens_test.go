package e2e

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// withAttempt returns the delivery token text with its attempt replaced,
// as a client forging tokens would make it: the token's layout is the
// version byte, then the incarnation, partition, epoch, event id and
// attempt as unsigned varints, then the subscription's name.
func withAttempt(t *testing.T, text string, attempt uint64) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) == 0 {
		t.Fatalf("token %q: %v", text, err)
	}
	out, rest := []byte{b[0]}, b[1:]
	for i := range 5 {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			t.Fatalf("token %q: field %d", text, i)
		}
		if i == 4 {
			v = attempt
		}
		out, rest = binary.AppendUvarint(out, v), rest[n:]
	}
	return base64.RawURLEncoding.EncodeToString(append(out, rest...))
}

// TestDeliveryTokensFenced: a delivery token settles only the delivery it
// was made for: not the same event's delivery in a subscription deleted
// and created again under the name (its epochs start again), and not
// with another attempt than the one in flight.
func TestDeliveryTokensFenced(t *testing.T) { eachTarget(t, testDeliveryTokensFenced) }

func testDeliveryTokensFenced(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed"))
	create := `{"subscription":"fenced","subject":"/orders","options":{"recursive":true}}`
	settle := func(route, tokens string) string {
		t.Helper()
		r := inst.Do("POST", "/api/v1/"+route, harness.Token, `{"subscription":"fenced","deliveries":`+tokens+`}`)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", route, r.StatusCode, r.Body)
		}
		return string(r.Body)
	}
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, create); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	w1 := consume(t, inst, "fenced", "w1")
	old := w1.deliveries(t, 1)

	// Deleted and created again: the same event, partition, epoch and
	// attempt, and the old token is stale all the same.
	if r := inst.Do("POST", "/api/v1/delete-subscription", harness.Token, `{"subscription":"fenced"}`); r.StatusCode != 200 {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	w1.cancel()
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, create); r.StatusCode != 200 {
		t.Fatalf("create again: %d %s", r.StatusCode, r.Body)
	}
	again := consume(t, inst, "fenced", "w1").deliveries(t, 1)
	if again[0].Attempt != old[0].Attempt || again[0].Partition != old[0].Partition || string(again[0].Event) != string(old[0].Event) {
		t.Fatalf("the new incarnation's delivery %+v differs from the old %+v beyond its token", again[0], old[0])
	}
	if got := settle("acknowledge-deliveries", tokensOf(old)); got != `{"acknowledged":0,"stale":["`+old[0].Delivery+`"]}`+"\n" {
		t.Fatalf("the old incarnation's token: %s", got)
	}

	// Another attempt than the one in flight is stale, whatever the action.
	forged := withAttempt(t, again[0].Delivery, 7)
	for _, route := range []string{"acknowledge-deliveries", "retry-deliveries", "park-deliveries"} {
		if got := settle(route, `["`+forged+`"]`); !strings.Contains(got, `"stale":["`+forged+`"]`) {
			t.Fatalf("%s with attempt 7 of the attempt-1 delivery: %s", route, got)
		}
	}
	if got := settle("acknowledge-deliveries", tokensOf(again)); got != `{"acknowledged":1,"stale":[]}`+"\n" {
		t.Fatalf("the delivery's own token: %s", got)
	}
	waitUntil(t, 10*time.Second, func() bool { return subscriptionOf(t, inst, "fenced")["inFlight"] == float64(0) })
}
