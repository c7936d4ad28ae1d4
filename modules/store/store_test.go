package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// The library's helpers, under the names these tests use.
const lib = storetest.Lib

var (
	candidate    = storetest.Candidate
	write        = storetest.Write
	libraryStore = storetest.Library
)

// ids collects the ids of an iterator.
func ids(t testing.TB, it store.RecordIterator) string {
	t.Helper()
	var out []string
	for it.Next() {
		out = append(out, fmt.Sprint(it.Record().ID))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ",")
}

func TestReadExamples(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		incl := func(id uint64) *store.Bound { return &store.Bound{ID: id, Inclusive: true} }
		excl := func(id uint64) *store.Bound { return &store.Bound{ID: id} }
		cases := []struct {
			name string
			opts store.ReadOptions
			want string
		}{
			{"1 exact", store.ReadOptions{Subject: "/books/42"}, "0,1,3,6"},
			{"2 recursive", store.ReadOptions{Subject: "/books/42", Recursive: true}, "0,1,3,5,6"},
			{"3 parent not recursive", store.ReadOptions{Subject: "/books"}, ""},
			{"4 parent recursive", store.ReadOptions{Subject: "/books", Recursive: true}, "0,1,2,3,5,6"},
			{"5 root recursive", store.ReadOptions{Subject: "/", Recursive: true}, "0,1,2,3,4,5,6"},
			{"5 root exact", store.ReadOptions{Subject: "/"}, ""},
			{"6 segment match", store.ReadOptions{Subject: "/books/4", Recursive: true}, ""},
			{"7 antichronological", store.ReadOptions{Subject: "/books/42", Recursive: true, Descending: true}, "6,5,3,1,0"},
			{"8 lower inclusive", store.ReadOptions{Subject: "/books/42", Recursive: true, Lower: incl(3)}, "3,5,6"},
			{"8 lower exclusive", store.ReadOptions{Subject: "/books/42", Recursive: true, Lower: excl(3)}, "5,6"},
			{"9 upper exclusive", store.ReadOptions{Subject: "/books/42", Upper: excl(3)}, "0,1"},
			{"9 upper inclusive", store.ReadOptions{Subject: "/books/42", Upper: incl(3)}, "0,1,3"},
			{"10 both bounds", store.ReadOptions{Subject: "/books", Recursive: true, Lower: incl(1), Upper: incl(5)}, "1,2,3,5"},
			{"11 from latest", store.ReadOptions{Subject: "/books/42", Recursive: true, FromLatest: &store.FromLatest{Subject: "/books/42", Type: lib + "book-returned"}}, "3,5,6"},
			{"12 marker on another subject", store.ReadOptions{Subject: "/books/42", FromLatest: &store.FromLatest{Subject: "/readers/jane", Type: lib + "reader-registered"}}, "6"},
			{"13 missing, read nothing", store.ReadOptions{Subject: "/books/42", FromLatest: &store.FromLatest{Subject: "/books/42", Type: lib + "book-lost"}}, ""},
			{"13 missing, read everything", store.ReadOptions{Subject: "/books/42", FromLatest: &store.FromLatest{Subject: "/books/42", Type: lib + "book-lost", ReadEverything: true}}, "0,1,3,6"},
			{"14 antichronological from latest", store.ReadOptions{Subject: "/books/42", Recursive: true, Descending: true, FromLatest: &store.FromLatest{Subject: "/books/42", Type: lib + "book-returned"}}, "6,5,3"},
			{"lower above upper", store.ReadOptions{Subject: "/", Recursive: true, Lower: incl(5), Upper: incl(2)}, ""},
			{"bound beyond the head", store.ReadOptions{Subject: "/", Recursive: true, Lower: incl(1 << 62)}, ""},
			{"exclusive upper 0", store.ReadOptions{Subject: "/", Recursive: true, Upper: excl(0)}, ""},
			{"root descending with bounds", store.ReadOptions{Subject: "/", Recursive: true, Descending: true, Lower: excl(1), Upper: excl(5)}, "4,3,2"},
			{"exact descending", store.ReadOptions{Subject: "/books/42", Descending: true, Upper: incl(5)}, "3,1,0"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				it, err := s.Read(tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(t, it); got != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			})
		}
	})
}

func TestSubjects(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		list := func(base string) string {
			it := s.Subjects(base)
			var out []string
			for it.Next() {
				out = append(out, it.Value())
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, " ")
		}
		for base, want := range map[string]string{
			"/":               "/ /books /books/42 /books/42/notes /books/7 /readers /readers/jane",
			"/books":          "/books /books/42 /books/42/notes /books/7",
			"/books/42/notes": "/books/42/notes",
			"/authors":        "",
			"/books/4":        "",
		} {
			if got := list(base); got != want {
				t.Errorf("Subjects(%q) = %q, want %q", base, got, want)
			}
		}

		// Segment order, not string order: /a/c comes before /a-b.
		other := storetest.Start(t, b.New(t))
		defer storetest.Close(t, other)
		write(t, other, candidate("/a-b", "io.example.x", `{}`), candidate("/a/c", "io.example.x", `{}`), candidate("/b", "io.example.x", `{}`))
		it := other.Subjects("/")
		var got []string
		for it.Next() {
			got = append(got, it.Value())
		}
		it.Close()
		if strings.Join(got, " ") != "/ /a /a/c /a-b /b" {
			t.Fatalf("segment order: %v", got)
		}
		empty := storetest.Start(t, b.New(t))
		defer storetest.Close(t, empty)
		it = empty.Subjects("/")
		defer it.Close()
		if it.Next() {
			t.Fatalf("empty store lists %q", it.Value())
		}
	})
}

func TestPreconditions(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		defer storetest.Close(t, s)
		write(t, s, candidate("/books/42", lib+"book-acquired", `{}`))
		c := candidate("/books/42", lib+"book-borrowed", `{}`)
		cases := []struct {
			name string
			p    store.Precondition
			ok   bool
		}{
			{"pristine on a populated subject", store.Precondition{Kind: store.SubjectPristine, Subject: "/books/42"}, false},
			{"pristine on a new subject", store.Precondition{Kind: store.SubjectPristine, Subject: "/books/9"}, true},
			{"pristine is exact, not recursive", store.Precondition{Kind: store.SubjectPristine, Subject: "/books"}, true},
			{"populated on an empty subject", store.Precondition{Kind: store.SubjectPopulated, Subject: "/books/9"}, false},
			{"on event id, wrong id", store.Precondition{Kind: store.SubjectOnEventID, Subject: "/books/42", EventID: 7}, false},
			{"on event id, empty subject", store.Precondition{Kind: store.SubjectOnEventID, Subject: "/nothing", EventID: 0}, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := s.Durable()
				_, err := s.Write(context.Background(), []event.Candidate{c}, []store.Precondition{tc.p})
				if tc.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrPreconditionFailed)) {
					t.Fatalf("got %v, want ok=%v", err, tc.ok)
				}
				if !tc.ok && s.Durable() != before {
					t.Fatal("a failed write changed the store")
				}
			})
		}
		latest, _, _ := s.LatestID("/books/42", "")
		if _, err := s.Write(context.Background(), []event.Candidate{c}, []store.Precondition{
			{Kind: store.SubjectPopulated, Subject: "/books/42"},
			{Kind: store.SubjectOnEventID, Subject: "/books/42", EventID: latest},
		}); err != nil {
			t.Fatalf("all preconditions hold: %v", err)
		}
	})
}

func TestConcurrentWritesAreContiguousAndChained(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		defer storetest.Close(t, s)
		const writers, rounds = 32, 20
		var wg sync.WaitGroup
		errs := make(chan error, writers*rounds)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					n := 1 + (w+r)%3
					cs := make([]event.Candidate, n)
					for i := range cs {
						cs[i] = candidate(fmt.Sprintf("/w/%d", w), "io.example.written", fmt.Sprintf(`{"r":%d,"i":%d}`, r, i))
					}
					records, err := s.Write(context.Background(), cs, nil)
					if err != nil {
						errs <- err
						return
					}
					for i := 1; i < len(records); i++ {
						if records[i].ID != records[i-1].ID+1 {
							errs <- fmt.Errorf("events of one request not consecutive: %d then %d", records[i-1].ID, records[i].ID)
						}
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		checkChain(t, s)
	})
}

// checkChain verifies ids 0..n-1, every hash, every link and strictly
// increasing times over the whole store.
func checkChain(t testing.TB, s *store.Store) uint64 {
	t.Helper()
	it, err := s.Read(store.ReadOptions{Subject: "/", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var (
		n        uint64
		prevHash = event.ZeroHash
		prevTime time.Time
	)
	for it.Next() {
		r := it.Record()
		f, err := event.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != n {
			t.Fatalf("id %d at position %d", r.ID, n)
		}
		if err := f.Verify(); err != nil {
			t.Fatalf("event %d: %v", r.ID, err)
		}
		if f.PredecessorHash != prevHash {
			t.Fatalf("event %d links to %s, want %s", r.ID, f.PredecessorHash, prevHash)
		}
		ts, err := event.ParseTime(f.Time)
		if err != nil || !ts.After(prevTime) || len(f.Time) != 30 || f.Time[28] == '0' {
			t.Fatalf("event %d time %s after %s", r.ID, f.Time, prevTime)
		}
		prevHash, prevTime = f.Hash, ts
		n++
	}
	if n != s.Durable() {
		t.Fatalf("read %d events, durable %d", n, s.Durable())
	}
	return n
}

func TestPreconditionRace(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		defer storetest.Close(t, s)
		const rounds = 25
		storetest.RaceOnPreconditions(t, []*store.Store{s}, 16, rounds)
		if got := s.Durable(); got != rounds+1 {
			t.Fatalf("%d events after %d rounds, want %d", got, rounds, rounds+1)
		}
	})
}

func TestRestartContinuesTheChain(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		open := b.New(t)
		s := storetest.Start(t, open)
		before := write(t, s, candidate("/a", "io.example.x", `{"n":1}`), candidate("/a", "io.example.x", `{"n":2}`))
		storetest.Close(t, s)

		s = storetest.Start(t, open)
		defer storetest.Close(t, s)
		if s.Durable() != 2 {
			t.Fatalf("durable %d after restart", s.Durable())
		}
		after := write(t, s, candidate("/a", "io.example.x", `{"n":3}`))
		if after[0].ID != 2 {
			t.Fatalf("first id after restart %d", after[0].ID)
		}
		f, _ := event.Decode(after[0])
		if f.PredecessorHash != before[1].Hash() {
			t.Fatalf("restart broke the chain")
		}
		checkChain(t, s)
	})
}

func TestCloseFinishesQueuedWrites(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		var wg sync.WaitGroup
		results := make(chan error, 200)
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, err := s.Write(context.Background(), []event.Candidate{candidate("/c", "io.example.x", `{}`)}, nil)
				results <- err
			}(i)
		}
		time.Sleep(time.Millisecond)
		storetest.Close(t, s)
		wg.Wait()
		close(results)
		ok := 0
		for err := range results {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrClosed):
				t.Fatalf("write during close: %v", err)
			}
		}
		if uint64(ok) != s.Durable() {
			t.Fatalf("%d writes acknowledged, %d durable", ok, s.Durable())
		}
	})
}

func TestCorruptHeadRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	backend, err := pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, r := event.Seal(nil, candidate("/a", "io.example.x", `{}`), 0, time.Now(), []byte(event.ZeroHash))
	// A head that claims a different hash than the event it covers.
	storetest.Commit(t, backend, store.Batch{Records: []store.Written{{Record: r, Subject: "/a", Type: "io.example.x"}},
		Head: store.Head{Count: 1, LastHash: strings.Repeat("ab", 32), LastTime: time.Now()}})
	backend.Close()
	start := func() error {
		return store.New(func() (store.Backend, error) {
			return pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{})
		}, zap.NewNop(), nil, store.Memory{}).Start(context.Background())
	}
	var corrupt *store.CorruptionError
	if err := start(); !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "head hash") {
		t.Fatalf("start with a wrong head: %v", err)
	}

	// A head that stops short of an event.
	backend, err = pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Commit(t, backend, store.Batch{Head: store.Head{Count: 0, LastHash: event.ZeroHash}})
	backend.Close()
	if err := start(); !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "beyond the head") {
		t.Fatalf("start with events beyond the head: %v", err)
	}
}

func TestReadOnlyMode(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := libraryStore(t, b)
		// Writes queued before the switch are committed; after it, none is.
		before := make(chan error, 1)
		go func() {
			_, err := s.Write(context.Background(), []event.Candidate{candidate("/a", lib+"x", `{}`)}, nil)
			before <- err
		}()
		for s.Durable() != 8 {
			time.Sleep(time.Millisecond)
		}
		release := holdWriter(t, s)
		queued := make(chan error, 1)
		go func() {
			_, err := s.Write(context.Background(), []event.Candidate{candidate("/b", lib+"x", `{}`)}, nil)
			queued <- err
		}()
		time.Sleep(100 * time.Millisecond)
		entering := make(chan error, 1)
		go func() { entering <- s.EnterReadOnly(context.Background()) }()
		time.Sleep(100 * time.Millisecond)
		behind := make(chan error, 1) // queued behind the switch, in its group
		go func() {
			_, err := s.Write(context.Background(), []event.Candidate{candidate("/d", lib+"x", `{}`)}, nil)
			behind <- err
		}()
		time.Sleep(100 * time.Millisecond)
		release()
		if err := <-before; err != nil {
			t.Fatalf("the write before the switch: %v", err)
		}
		if err := <-queued; err != nil {
			t.Fatalf("the write queued before the switch: %v", err)
		}
		if err := <-entering; err != nil || !s.ReadOnly() {
			t.Fatalf("entering read-only mode: %v, read-only %v", err, s.ReadOnly())
		}
		if err := <-behind; !errors.Is(err, store.ErrReadOnly) {
			t.Fatalf("a write queued behind the switch: %v", err)
		}
		if _, err := s.Write(context.Background(), []event.Candidate{candidate("/c", lib+"x", `{}`)}, nil); !errors.Is(err, store.ErrReadOnly) {
			t.Fatalf("a write in read-only mode: %v", err)
		}
		if err := s.RegisterSchema(context.Background(), lib+"x", mustCompile(t, `{"type":"object","properties":{}}`)); !errors.Is(err, store.ErrReadOnly) {
			t.Fatalf("a registration in read-only mode: %v", err)
		}
		if err := s.EnterReadOnly(context.Background()); err != nil {
			t.Fatalf("entering again: %v", err)
		}
		if s.Durable() != 9 {
			t.Fatalf("%d events, want the 7 of the library and the 2 before the switch", s.Durable())
		}
		// Reads go on.
		it, err := s.Read(store.ReadOptions{Subject: "/b"})
		if err != nil || !it.Next() {
			t.Fatalf("a read in read-only mode: %v", err)
		}
		it.Close()
	})
}
