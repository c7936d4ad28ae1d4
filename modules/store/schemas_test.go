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
	"github.com/eventstore-service/eventstore/modules/store/storetest"
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
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
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
		s = storetest.Start(t, open)
		defer storetest.Close(t, s)
		if _, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.strict", `{"n":"text"}`)}, nil); !errors.As(err, &conflict) || conflict.Msg != "at '/n': expected integer, but got string" {
			t.Fatalf("after restart: %v", err)
		}
		if err := s.RegisterSchema(context.Background(), "io.example.phantom", mustCompile(t, `{"type":"object","properties":{}}`)); !errors.Is(err, store.ErrSchemaExists) {
			t.Fatalf("registration after restart: %v", err)
		}
	})
}

func TestRegistrationChecksExistingEvents(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
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
	})
}

// TestRegistrationRacesWrites registers a schema while writers write events
// of its type, one of them violating it, at random moments. Whichever comes
// first, the store must stay consistent: a registration that succeeded
// means no violating event of the type is stored, and a refused one names a
// violating event. Across the rounds both outcomes must occur.
func TestRegistrationRacesWrites(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
		rng := rand.New(rand.NewPCG(7, 7))
		outcomes := map[string]int{}
		for round := 0; round < 60; round++ {
			eventType := fmt.Sprintf("io.example.race%d", round)
			sch := mustCompile(t, strictSchema)
			stop := storetest.Loop(4, func(_, i int) bool {
				_, _ = s.Write(context.Background(), []event.Candidate{candidate("/race", eventType, fmt.Sprintf(`{"n":%d}`, i))}, nil)
				return true
			})
			var wg sync.WaitGroup
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
			stop()
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
		backend, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer backend.Close()
		if _, err := storetest.Verify(context.Background(), backend); err != nil {
			t.Fatalf("after %v: %v", outcomes, err)
		}
	})
}

// TestSchemasKeepTheRegistrationOrder registers schemas out of alphabetical
// order and expects the view (which backups write) to list them in the
// order of registration, before and after a restart.
func TestSchemasKeepTheRegistrationOrder(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
		want := []string{"io.example.c", "io.example.a", "io.example.d", "io.example.b"}
		for _, et := range want {
			if err := s.RegisterSchema(context.Background(), et, mustCompile(t, `{"type":"object","properties":{}}`)); err != nil {
				t.Fatal(err)
			}
		}
		order := func(s *store.Store) string {
			var got []string
			for _, sw := range s.View().Schemas() {
				got = append(got, sw.Type)
			}
			return strings.Join(got, " ")
		}
		if got := order(s); got != strings.Join(want, " ") {
			t.Fatalf("order before a restart: %s", got)
		}
		storetest.Close(t, s)
		s = storetest.Start(t, open)
		defer storetest.Close(t, s)
		if got := order(s); got != strings.Join(want, " ") {
			t.Fatalf("order after a restart: %s", got)
		}
	})
}
