package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// viewSubjects lists a view's subjects.
func viewSubjects(t *testing.T, v *store.View) string {
	t.Helper()
	var out []string
	if err := v.Subjects(func(s string) error { out = append(out, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// viewTypes lists a view's event types, phantoms marked with "?".
func viewTypes(t *testing.T, v *store.View) string {
	t.Helper()
	types, err := v.EventTypes()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, et := range types {
		name := strings.TrimPrefix(et.Name, lib)
		if et.Phantom {
			name += "?"
		}
		out = append(out, name)
	}
	return strings.Join(out, " ")
}

func TestSubjectPrefixScans(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
		for _, subject := range []string{"/books/42", "/books/4", "/books/7", "/books/42/notes", "/books", "/books/45/x", "/bookshelf", "/readers/4"} {
			write(t, s, candidate(subject, lib+"x", `{}`))
		}
		cases := map[string]string{
			"/books/4":   "0,1,3,5",
			"/books/":    "0,1,2,3,5",
			"/books":     "0,1,2,3,4,5,6",
			"/books/42":  "0,3",
			"/b":         "0,1,2,3,4,5,6",
			"/":          "0,1,2,3,4,5,6,7",
			"/x":         "",
			"/books\x01": "",
		}
		check := func(where string) {
			for prefix, want := range cases {
				if got := ids(t, s.Scan(store.Scan{SubjectPrefix: prefix, From: 0, To: math.MaxUint64})); got != want {
					t.Errorf("%s: prefix %q: got %q, want %q", where, prefix, got, want)
				}
			}
			if got := ids(t, s.Scan(store.Scan{SubjectPrefix: "/books/4", From: 1, To: 4, Descending: true})); got != "3,1" {
				t.Errorf("%s: bounded descending prefix scan: got %q", where, got)
			}
		}
		check("window")
		storetest.Close(t, s)
		s = storetest.Start(t, open) // the window is empty after a restart: storage serves
		defer storetest.Close(t, s)
		check("storage")
	})
}

func TestViewIsASnapshot(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		v := s.View()
		sch, err := schema.Compile([]byte(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RegisterSchema(context.Background(), lib+"book-lost", sch); err != nil {
			t.Fatal(err)
		}
		write(t, s, candidate("/shelves/1", lib+"shelf-built", `{}`), candidate("/books/42", lib+"book-lost", `{}`))
		if got, want := viewSubjects(t, v), "/ /books /books/42 /books/42/notes /books/7 /readers /readers/jane"; got != want {
			t.Errorf("subjects: got %q, want %q", got, want)
		}
		if got, want := viewTypes(t, v), "book-acquired book-borrowed book-returned note-added reader-registered"; got != want {
			t.Errorf("types: got %q, want %q", got, want)
		}
		if got := ids(t, v.Scan(store.Scan{From: 0, To: math.MaxUint64})); got != "0,1,2,3,4,5,6" {
			t.Errorf("events: got %q", got)
		}
		if v.Count() != 7 {
			t.Errorf("count %d", v.Count())
		}
		now := s.View()
		if got, want := viewSubjects(t, now), "/ /books /books/42 /books/42/notes /books/7 /readers /readers/jane /shelves /shelves/1"; got != want {
			t.Errorf("subjects now: got %q, want %q", got, want)
		}
		if got, want := viewTypes(t, now), "book-acquired book-borrowed book-lost book-returned note-added reader-registered shelf-built"; got != want {
			t.Errorf("types now: got %q, want %q", got, want)
		}
	})
}

// conditionFunc adapts a function to store.Condition, affected by every write.
type conditionFunc func(ctx context.Context, v *store.View) (bool, error)

func (f conditionFunc) Holds(ctx context.Context, v *store.View) (bool, error) { return f(ctx, v) }
func (f conditionFunc) Affects(store.Written) bool                             { return true }
func (f conditionFunc) ReadsSchemas() bool                                     { return true }

// TestConditionAffectedInItsGroupIsDecidedAgain queues a write behind one
// that changes what its condition read, in one group: the writer sends it
// back, and its condition, evaluated again outside the writer, sees the
// other write committed.
func TestConditionAffectedInItsGroupIsDecidedAgain(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b) // events 0..6
		var seen []string
		probe := conditionFunc(func(_ context.Context, v *store.View) (bool, error) {
			seen = append(seen, viewSubjects(t, v)+" | "+viewTypes(t, v)+" | "+
				ids(t, v.Scan(store.Scan{Subject: "/a", Recursive: true, From: 0, To: math.MaxUint64})))
			return true, nil
		})
		release := holdWriter(t, s)
		errs := make(chan error, 2)
		writeWith := func(subject, eventType string, c store.Condition) {
			var pre []store.Precondition
			if c != nil {
				pre = []store.Precondition{{Kind: store.ConditionHolds, Condition: c}}
			}
			_, err := s.Write(context.Background(), []event.Candidate{candidate(subject, lib+eventType, `{}`)}, pre)
			errs <- err
		}
		go writeWith("/a/b", "second", nil) // id 7, queued
		time.Sleep(200 * time.Millisecond)
		go writeWith("/c", "third", probe) // evaluated on events 0..6, queued behind it: one group
		time.Sleep(200 * time.Millisecond)
		release()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		want := []string{
			"/ /books /books/42 /books/42/notes /books/7 /readers /readers/jane" +
				" | book-acquired book-borrowed book-returned note-added reader-registered | ",
			"/ /a /a/b /books /books/42 /books/42/notes /books/7 /readers /readers/jane" +
				" | book-acquired book-borrowed book-returned note-added reader-registered second | 7",
		}
		if !slices.Equal(seen, want) {
			t.Fatalf("the condition saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
		}
		if s.Durable() != 9 {
			t.Fatalf("%d events, want 9", s.Durable())
		}
	})
}

func TestConditionOutcomes(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		write1 := func(c store.Condition) error {
			_, err := s.Write(context.Background(), []event.Candidate{candidate("/z", lib+"z", `{}`)},
				[]store.Precondition{{Kind: store.ConditionHolds, Condition: c}})
			return err
		}
		boom := errors.New("query failed: boom")
		if err := write1(conditionFunc(func(context.Context, *store.View) (bool, error) { return false, nil })); !errors.Is(err, store.ErrPreconditionFailed) {
			t.Errorf("false condition: %v", err)
		}
		var invalid *store.InvalidPreconditionError
		err := write1(conditionFunc(func(context.Context, *store.View) (bool, error) { return false, boom }))
		if !errors.As(err, &invalid) || !errors.Is(err, boom) || err.Error() != "invalid precondition: query failed: boom" {
			t.Errorf("failing condition: %v", err)
		}
		if s.Durable() != 7 {
			t.Fatalf("%d events after refused writes", s.Durable())
		}
		if err := write1(conditionFunc(func(_ context.Context, v *store.View) (bool, error) { return v.Count() == 7, nil })); err != nil {
			t.Errorf("true condition: %v", err)
		}
	})
}

// TestScanByIDs reads exactly the events asked for, in either order, from
// the recent window and from storage, within From and To.
func TestScanByIDs(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		for _, mem := range []store.Memory{{}, {WindowBytes: 1}} {
			s := storetest.StartWith(t, b.New(t), mem)
			for i := range 12 {
				write(t, s, candidate(fmt.Sprintf("/books/%d", i%3), lib+"book-acquired", `{}`))
			}
			v := s.View()
			for _, c := range []struct {
				scan store.Scan
				want string
			}{
				{store.Scan{IDs: []uint64{1, 2, 7, 11}, From: 0, To: math.MaxUint64}, "1,2,7,11"},
				{store.Scan{IDs: []uint64{1, 2, 7, 11}, From: 2, To: 7}, "2,7"},
				{store.Scan{IDs: []uint64{0, 5, 9}, From: 0, To: math.MaxUint64, Descending: true}, "9,5,0"},
				{store.Scan{IDs: []uint64{3, 40}, From: 0, To: math.MaxUint64}, "3"},
			} {
				if got := ids(t, v.Scan(c.scan)); got != c.want {
					t.Errorf("window %d: %+v read %q, want %q", mem.WindowBytes, c.scan, got, c.want)
				}
			}
			storetest.Close(t, s)
		}
	})
}
