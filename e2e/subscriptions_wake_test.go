package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestSettlesWakeTheConsumer: a settle that gives the consumer something
// to send is acted on at once, not at the consumer's next timer (the
// acknowledge timeout, 30 s here): an immediate retry is sent again at
// once, a retry after 1500ms after 1.5 s, and an acknowledgement that
// frees a full window lets the next event out.
func TestSettlesWakeTheConsumer(t *testing.T) { eachTarget(t, testSettlesWakeTheConsumer) }

func testSettlesWakeTheConsumer(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed", "/orders/1", "io.example.paid"))
	create := `{"subscription":"waking","subject":"/orders","options":{"recursive":true,"maxInFlight":1,"acknowledgeTimeout":"30s"}}`
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, create); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	settle := func(route, body string) {
		t.Helper()
		r := inst.Do("POST", "/api/v1/"+route, harness.Token, `{"subscription":"waking",`+body+`}`)
		if r.StatusCode != 200 || strings.Contains(string(r.Body), `:0,`) {
			t.Fatalf("%s: %d %s", route, r.StatusCode, r.Body)
		}
	}
	w1 := consume(t, inst, "waking", "w1")
	first := w1.deliveries(t, 1)

	settle("retry-deliveries", `"deliveries":`+tokensOf(first))
	asked := time.Now()
	again := w1.deliveries(t, 1)
	if again[0].Attempt != 2 || string(again[0].Event) != string(first[0].Event) || time.Since(asked) > 5*time.Second {
		t.Fatalf("an immediate retry: %+v after %v", again[0], time.Since(asked))
	}

	settle("retry-deliveries", `"deliveries":`+tokensOf(again)+`,"after":"1500ms"`)
	asked = time.Now()
	later := w1.deliveries(t, 1)
	if took := time.Since(asked); later[0].Attempt != 3 || took < 1400*time.Millisecond || took > 6*time.Second {
		t.Fatalf("a retry after 1500ms: %+v after %v", later[0], took)
	}

	settle("acknowledge-deliveries", `"deliveries":`+tokensOf(later))
	asked = time.Now()
	next := w1.deliveries(t, 1)
	if !strings.Contains(string(next[0].Event), `"id":"1"`) || time.Since(asked) > 5*time.Second {
		t.Fatalf("the event after a full window: %s after %v", next[0].Event, time.Since(asked))
	}
}

// TestExtendDeliveries: extend-deliveries moves a delivery's acknowledge
// deadline to now + by, its attempt unchanged: it is not sent again at the
// acknowledge timeout, but at the new deadline; its token stays good until
// then, and a by out of bounds is refused.
func TestExtendDeliveries(t *testing.T) { eachTarget(t, testExtendDeliveries) }

func testExtendDeliveries(t *testing.T, start starter) {
	inst := start(t)
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed"))
	create := `{"subscription":"slow","subject":"/orders","options":{"recursive":true,"acknowledgeTimeout":"2s"}}`
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, create); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	w1 := consume(t, inst, "slow", "w1")
	first := w1.deliveries(t, 1)
	r := inst.Do("POST", "/api/v1/extend-deliveries", harness.Token, `{"subscription":"slow","deliveries":`+tokensOf(first)+`,"by":"5s"}`)
	extended := time.Now()
	if r.StatusCode != 200 || string(r.Body) != `{"extended":1,"stale":[]}`+"\n" {
		t.Fatalf("extend: %d %s", r.StatusCode, r.Body)
	}
	for _, by := range []string{"500ms", "2h", "soon"} {
		r := inst.Do("POST", "/api/v1/extend-deliveries", harness.Token, `{"subscription":"slow","deliveries":`+tokensOf(first)+`,"by":"`+by+`"}`)
		if r.StatusCode != 400 || !strings.Contains(string(r.Body), "by must be a duration of 1s to 1h") {
			t.Fatalf("extend by %s: %d %s", by, r.StatusCode, r.Body)
		}
	}
	again := w1.deliveries(t, 1) // at the new deadline, not the timeout
	if took := time.Since(extended); again[0].Attempt != 2 || took < 4500*time.Millisecond {
		t.Fatalf("sent again %v after the extension (attempt %d), want at 5 s", took, again[0].Attempt)
	}
	// Extending by default: the acknowledge timeout from now; the token of
	// the attempt in flight settles.
	if r := inst.Do("POST", "/api/v1/extend-deliveries", harness.Token, `{"subscription":"slow","deliveries":`+tokensOf(again)+`}`); r.StatusCode != 200 || !strings.Contains(string(r.Body), `"extended":1`) {
		t.Fatalf("extend by default: %d %s", r.StatusCode, r.Body)
	}
	if r := inst.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"slow","deliveries":`+tokensOf(again)+`}`); string(r.Body) != `{"acknowledged":1,"stale":[]}`+"\n" {
		t.Fatalf("acknowledge after the extension: %d %s", r.StatusCode, r.Body)
	}
}
