package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
	"go.uber.org/zap"
)

const strictSchema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`

func mustCompile(t testing.TB, raw string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaEnforcement(t *testing.T) {
	dir := t.TempDir()
	s := storetest.Open(t, dir, nil)
	write(t, s, candidate("/a", "io.example.free", `{"anything":true}`))
	if err := s.RegisterSchema(context.Background(), "io.example.strict", mustCompile(t, strictSchema)); err != nil {
		t.Fatal(err)
	}
	before := s.Durable()
	_, err := s.Write(context.Background(), []event.Candidate{
		candidate("/a", "io.example.strict", `{"n":1}`),
		candidate("/a", "io.example.strict", `{"extra":1,"n":2}`),
	}, nil)
	var conflict *store.CandidateConflictError
	if !errors.As(err, &conflict) || conflict.Msg != "additionalProperties 'extra' not allowed" || s.Durable() != before {
		t.Fatalf("write of a violating event: %v (durable %d, before %d)", err, s.Durable(), before)
	}
	write(t, s, candidate("/a", "io.example.strict", `{"n":3}`))
	if err := s.RegisterSchema(context.Background(), "io.example.strict", mustCompile(t, `{"type":"object","properties":{}}`)); !errors.Is(err, store.ErrSchemaExists) {
		t.Fatalf("second registration: %v", err)
	}
	if err := s.RegisterSchema(context.Background(), "io.example.phantom", mustCompile(t, `{"type":"object","properties":{}}`)); err != nil {
		t.Fatal(err)
	}

	types, err := s.EventTypes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, et := range types {
		got = append(got, fmt.Sprintf("%s phantom=%v schema=%v", et.Name, et.Phantom, et.Schema != nil))
	}
	want := "io.example.free phantom=false schema=false|io.example.phantom phantom=true schema=true|io.example.strict phantom=false schema=true"
	if strings.Join(got, "|") != want {
		t.Fatalf("event types:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	if et, found, err := s.EventType("io.example.phantom"); err != nil || !found || !et.Phantom || string(et.Schema.Raw) != `{"type":"object","properties":{}}` {
		t.Fatalf("EventType phantom: %+v %v %v", et, found, err)
	}
	if _, found, err := s.EventType("io.example.unknown"); err != nil || found {
		t.Fatalf("EventType unknown: %v %v", found, err)
	}
	storetest.Close(t, s)

	// Schemas survive a restart and are enforced.
	s = storetest.Open(t, dir, nil)
	defer storetest.Close(t, s)
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.strict", `{"n":"text"}`)}, nil); !errors.As(err, &conflict) || conflict.Msg != "at '/n': expected integer, but got string" {
		t.Fatalf("after restart: %v", err)
	}
	if err := s.RegisterSchema(context.Background(), "io.example.phantom", mustCompile(t, `{"type":"object","properties":{}}`)); !errors.Is(err, store.ErrSchemaExists) {
		t.Fatalf("registration after restart: %v", err)
	}
}

func TestRegistrationChecksExistingEvents(t *testing.T) {
	s := storetest.Open(t, t.TempDir(), nil)
	defer storetest.Close(t, s)
	write(t, s, candidate("/a", "io.example.t", `{"n":1}`), candidate("/a", "io.example.other", `{"x":1}`))
	write(t, s, candidate("/b", "io.example.t", `{"n":"two"}`), candidate("/b", "io.example.t", `{"n":3,"z":1}`))
	err := s.RegisterSchema(context.Background(), "io.example.t", mustCompile(t, strictSchema))
	var conflict *store.ExistingConflictError
	if !errors.As(err, &conflict) || conflict.ID != 2 || conflict.Msg != "at '/n': expected integer, but got string" {
		t.Fatalf("registration over violating events: %v", err)
	}
	// The refused schema was not stored: events of the type are free.
	write(t, s, candidate("/c", "io.example.t", `{"anything":true}`))
}

// TestRegistrationRacesWrites registers a schema while writers write events
// of its type, one of them violating it, at random moments. Whichever comes
// first, the store must stay consistent: a registration that succeeded
// means no violating event of the type is stored, and a refused one names a
// violating event. Across the rounds both outcomes must occur.
func TestRegistrationRacesWrites(t *testing.T) {
	dir := t.TempDir()
	s := storetest.Open(t, dir, nil)
	rng := rand.New(rand.NewPCG(7, 7))
	outcomes := map[string]int{}
	for round := 0; round < 60; round++ {
		eventType := fmt.Sprintf("io.example.race%d", round)
		sch := mustCompile(t, strictSchema)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					_, _ = s.Write(context.Background(), []event.Candidate{candidate("/race", eventType, fmt.Sprintf(`{"n":%d}`, i))}, nil)
				}
			}()
		}
		violationDelay := time.Duration(rng.IntN(3000)) * time.Microsecond
		registrationDelay := time.Duration(rng.IntN(3000)) * time.Microsecond
		var violation error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(violationDelay)
			_, violation = s.Write(context.Background(), []event.Candidate{candidate("/race", eventType, `{"n":"bad"}`)}, nil)
		}()
		time.Sleep(registrationDelay)
		err := s.RegisterSchema(context.Background(), eventType, sch)
		time.Sleep(time.Millisecond)
		close(stop)
		wg.Wait()

		var conflict *store.ExistingConflictError
		switch {
		case err == nil:
			outcomes["registered"]++
		case errors.As(err, &conflict):
			outcomes["refused"]++
			if violation != nil {
				t.Fatalf("round %d: registration refused over event %d, but the violating write failed: %v", round, conflict.ID, violation)
			}
		default:
			t.Fatalf("round %d: registration: %v", round, err)
		}
	}
	storetest.Close(t, s)
	if outcomes["registered"] == 0 || outcomes["refused"] == 0 {
		t.Fatalf("the race did not go both ways: %v", outcomes)
	}
	// Verify re-checks every event against the schemas that were registered.
	backend, err := pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	if _, err := store.Verify(context.Background(), backend, store.VerifyOptions{}); err != nil {
		t.Fatalf("after %v: %v", outcomes, err)
	}
}
