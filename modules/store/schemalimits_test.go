package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// schemaFigures returns the registered and compiled schemas of s, as
// Describe reports them.
func schemaFigures(t testing.TB, s *store.Store) (registered, compiled int) {
	t.Helper()
	figures, ok := s.Describe()["schemas"].(map[string]any)
	if !ok {
		t.Fatalf("Describe has no schemas: %v", s.Describe())
	}
	return figures["registered"].(int), figures["compiled"].(int)
}

// numbered is the schema of the i-th test type: an object with an integer n.
func numbered(i int) (eventType, raw string) {
	return fmt.Sprintf("io.example.numbered-%d", i), `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
}

func registerNumbered(t testing.TB, s *store.Store, i int) error {
	t.Helper()
	eventType, raw := numbered(i)
	return s.RegisterSchema(context.Background(), eventType, mustCompile(t, raw))
}

func TestSchemaLimit(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.StartWith(t, open, store.Memory{MaxSchemas: 3})
		for i := range 3 {
			if err := registerNumbered(t, s, i); err != nil {
				t.Fatalf("registration %d: %v", i, err)
			}
		}
		if err := registerNumbered(t, s, 3); !errors.Is(err, store.ErrTooManySchemas) {
			t.Fatalf("registration beyond the limit: %v", err)
		}
		if err := registerNumbered(t, s, 0); !errors.Is(err, store.ErrSchemaExists) {
			t.Fatalf("a second registration at the limit: %v, want ErrSchemaExists", err)
		}
		if registered, _ := schemaFigures(t, s); registered != 3 {
			t.Fatalf("%d schemas registered", registered)
		}
		storetest.Close(t, s)

		// The count survives a restart (Pebble's head does not keep it);
		// a higher limit takes more.
		s = storetest.StartWith(t, open, store.Memory{MaxSchemas: 3})
		if err := registerNumbered(t, s, 3); !errors.Is(err, store.ErrTooManySchemas) {
			t.Fatalf("registration beyond the limit after a restart: %v", err)
		}
		storetest.Close(t, s)
		s = storetest.StartWith(t, open, store.Memory{MaxSchemas: 4})
		if err := registerNumbered(t, s, 3); err != nil {
			t.Fatalf("registration under a higher limit: %v", err)
		}
	})
}

func TestSchemaLimitInOneGroup(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.StartWith(t, b.New(t), store.Memory{MaxSchemas: 2})
		if err := registerNumbered(t, s, 0); err != nil {
			t.Fatal(err)
		}
		first, raw := numbered(1)
		second, _ := numbered(2)
		errs := store.RegisterInOneGroup(s, []string{first, second}, []*schema.Schema{mustCompile(t, raw), mustCompile(t, raw)})
		if errs[0] != nil || !errors.Is(errs[1], store.ErrTooManySchemas) {
			t.Fatalf("two registrations in one group with room for one: %v, %v", errs[0], errs[1])
		}
		if registered, _ := schemaFigures(t, s); registered != 2 {
			t.Fatalf("%d schemas registered", registered)
		}
	})
}

func TestSchemaLimitAcrossNodes(t *testing.T) {
	open := storetest.Postgres(&pg).New(t)
	mem := store.Memory{MaxSchemas: 2}
	a, b := storetest.StartWith(t, open, mem), storetest.StartWith(t, open, mem)
	if err := registerNumbered(t, a, 0); err != nil {
		t.Fatal(err)
	}
	if err := registerNumbered(t, b, 1); err != nil {
		t.Fatal(err)
	}
	// Node a's writer decides, past any check against what a has followed
	// of b so far: it follows b's registration before it counts.
	third, raw := numbered(2)
	if errs := store.RegisterInOneGroup(a, []string{third}, []*schema.Schema{mustCompile(t, raw)}); !errors.Is(errs[0], store.ErrTooManySchemas) {
		t.Fatalf("a third registration on another node: %v", errs[0])
	}
	if err := registerNumbered(t, b, 3); !errors.Is(err, store.ErrTooManySchemas) {
		t.Fatalf("a third registration on the node of the second: %v", err)
	}
}

func TestSchemasCompileOnFirstUse(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		const n = 20
		open := b.New(t)
		s := storetest.Start(t, open)
		for i := range n {
			if err := registerNumbered(t, s, i); err != nil {
				t.Fatal(err)
			}
		}
		if registered, compiled := schemaFigures(t, s); registered != n || compiled != n {
			t.Fatalf("after %d registrations: %d registered, %d compiled", n, registered, compiled)
		}
		before, err := s.EventTypes()
		if err != nil {
			t.Fatal(err)
		}
		storetest.Close(t, s)

		s = storetest.Start(t, open)
		if registered, compiled := schemaFigures(t, s); registered != n || compiled != 0 {
			t.Fatalf("after a restart: %d registered, %d compiled", registered, compiled)
		}
		// Reading the types compiles nothing and shows the schemas as
		// registered.
		after, err := s.EventTypes()
		if err != nil || len(after) != n {
			t.Fatalf("event types after a restart: %d %v", len(after), err)
		}
		for i := range after {
			if after[i].Name != before[i].Name || string(after[i].Schema.Raw) != string(before[i].Schema.Raw) {
				t.Fatalf("type %d after a restart: %s %s, before %s %s", i, after[i].Name, after[i].Schema.Raw, before[i].Name, before[i].Schema.Raw)
			}
		}
		if _, _, err := s.EventType(after[0].Name); err != nil {
			t.Fatal(err)
		}
		if _, compiled := schemaFigures(t, s); compiled != 0 {
			t.Fatalf("reading the event types compiled %d schemas", compiled)
		}

		// Concurrent first writes of one type compile its schema once.
		eventType, _ := numbered(7)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Write(context.Background(), []event.Candidate{candidate("/c", eventType, fmt.Sprintf(`{"n":%d}`, w))}, nil); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if _, compiled := schemaFigures(t, s); compiled != 1 {
			t.Fatalf("after writes of one type: %d compiled", compiled)
		}

		// Validation is enforced as before, with the same messages.
		var conflict *store.CandidateConflictError
		for _, c := range []struct{ i int }{{7}, {11}} {
			eventType, _ := numbered(c.i)
			_, err := s.Write(context.Background(), []event.Candidate{candidate("/c", eventType, `{"extra":1,"n":2}`)}, nil)
			if !errors.As(err, &conflict) || conflict.Msg != "additionalProperties 'extra' not allowed" {
				t.Fatalf("a violating write of %s after a restart: %v", eventType, err)
			}
		}
		if _, compiled := schemaFigures(t, s); compiled != 2 {
			t.Fatalf("after writes of two types: %d compiled", compiled)
		}
	})
}

func TestStoredSchemaThatNoLongerCompiles(t *testing.T) {
	open := storetest.Pebble.New(t)
	backend, err := open()
	if err != nil {
		t.Fatal(err)
	}
	storetest.Commit(t, backend, store.Batch{
		State: storetest.SchemaRecords([]store.SchemaWritten{{Type: "io.example.broken", Raw: []byte(`{"type":"string","properties":{}}`)}}),
		Head:  store.Head{LastHash: event.ZeroHash, Commits: 1, States: 1},
	})
	if _, err := storetest.Verify(context.Background(), backend); err == nil || !strings.Contains(err.Error(), "stored schema of io.example.broken: invalid schema: at '/type'") {
		t.Fatalf("verify of a store with a broken schema: %v", err)
	}
	if err := backend.Close(); err != nil {
		t.Fatal(err)
	}
	// The store starts; a write of the type fails, not as a conflict.
	s := storetest.Start(t, open)
	_, err = s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.broken", `{}`)}, nil)
	var conflict *store.CandidateConflictError
	if err == nil || errors.As(err, &conflict) || !strings.Contains(err.Error(), "validate an event of io.example.broken: compile the stored schema: invalid schema") {
		t.Fatalf("write of a type whose stored schema does not compile: %v", err)
	}
	write(t, s, candidate("/a", "io.example.other", `{}`))
}
