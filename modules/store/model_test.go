package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

var (
	modelSubjects = []string{"/", "/a", "/a/b", "/a/b/c", "/a-b", "/a/c", "/b", "/b/x/y"}
	modelTypes    = []string{"io.example.one", "io.example.two", "io.example.three"}
	querySubjects = append(slices.Clone(modelSubjects), "/a/b/c/d", "/z", "/a/b/cc", "/b/x")
)

type modelEvent struct {
	id            uint64
	subject, kind string
}

// within reports whether subject is base or below it, by segments.
func within(base, subject string) bool {
	return base == "/" || subject == base || strings.HasPrefix(subject, base+"/")
}

// TestReadMatchesModel writes random events in random batches from
// concurrent writers, so that group commits mix requests and postings hold
// many ids, and compares hundreds of random reads with a naive model.
func TestReadMatchesModel(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 99))
				open := b.New(t)
				s := storetest.Start(t, open)

				var (
					mu    sync.Mutex
					model []modelEvent
					wg    sync.WaitGroup
					errs  = make(chan error, 8)
					seeds = []uint64{rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()}
				)
				for w := range seeds {
					wg.Add(1)
					go func(r *rand.Rand) {
						defer wg.Done()
						for b := 0; b < 40; b++ {
							batch := make([]event.Candidate, 1+r.IntN(12))
							for i := range batch {
								batch[i] = candidate(modelSubjects[r.IntN(len(modelSubjects))], modelTypes[r.IntN(len(modelTypes))], `{}`)
							}
							records, err := s.Write(context.Background(), batch, nil)
							if err != nil {
								errs <- err
								return
							}
							mu.Lock()
							for i, rec := range records {
								model = append(model, modelEvent{rec.ID, batch[i].Subject, batch[i].Type})
							}
							mu.Unlock()
						}
					}(rand.New(rand.NewPCG(seeds[w], 1)))
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				slices.SortFunc(model, func(a, b modelEvent) int { return int(a.id) - int(b.id) })
				n := uint64(len(model))

				for _, served := range []string{"window", "storage"} {
					if served == "storage" {
						// A restart empties the live window: storage serves every read.
						storetest.Close(t, s)
						s = storetest.Start(t, open)
					}
					for q := 0; q < 400; q++ {
						opts := store.ReadOptions{
							Subject:    querySubjects[rng.IntN(len(querySubjects))],
							Recursive:  rng.IntN(2) == 0,
							Descending: rng.IntN(2) == 0,
						}
						bound := func() *store.Bound {
							if rng.IntN(3) == 0 {
								return nil
							}
							return &store.Bound{ID: rng.Uint64N(n + 5), Inclusive: rng.IntN(2) == 0}
						}
						opts.Lower, opts.Upper = bound(), bound()
						if rng.IntN(3) == 0 {
							opts.FromLatest = &store.FromLatest{
								Subject:        querySubjects[rng.IntN(len(querySubjects))],
								Type:           modelTypes[rng.IntN(len(modelTypes))],
								ReadEverything: rng.IntN(2) == 0,
							}
						}
						it, err := s.Read(opts)
						if err != nil {
							t.Fatal(err)
						}
						got := ids(t, it)
						if want := modelRead(model, opts); got != want {
							t.Fatalf("%s: query %d %+v (lower %v upper %v from %v):\n got %s\nwant %s", served, q, opts, opts.Lower, opts.Upper, opts.FromLatest, got, want)
						}
					}

					for q := 0; q < 200; q++ {
						// Scans by type, by subject and type, and by subject.
						sc := store.Scan{Type: modelTypes[rng.IntN(len(modelTypes))], From: rng.Uint64N(n + 2), To: rng.Uint64N(n + 2), Descending: rng.IntN(2) == 0}
						switch rng.IntN(3) {
						case 0:
							sc.Subject = querySubjects[rng.IntN(len(querySubjects))]
						case 1:
							sc.Subject, sc.Type, sc.Recursive = querySubjects[rng.IntN(len(querySubjects))], "", rng.IntN(2) == 0
						}
						var want []string
						for _, e := range model {
							subjectOK := sc.Subject == "" || e.subject == sc.Subject || (sc.Recursive && within(sc.Subject, e.subject))
							if (sc.Type == "" || e.kind == sc.Type) && subjectOK && e.id >= sc.From && e.id <= sc.To {
								want = append(want, fmt.Sprint(e.id))
							}
						}
						if sc.Descending {
							slices.Reverse(want)
						}
						if got := ids(t, s.Scan(sc)); got != strings.Join(want, ",") {
							t.Fatalf("%s: scan %+v:\n got %s\nwant %s", served, sc, got, strings.Join(want, ","))
						}
					}

					for q := 0; q < 100; q++ {
						sc := store.Scan{Subject: querySubjects[rng.IntN(len(querySubjects))], Recursive: rng.IntN(2) == 0, From: rng.Uint64N(n + 2), To: rng.Uint64N(n + 2)}
						if q%10 == 0 {
							sc.Subject = "" // every event
						}
						checkGroups(t, s, model, sc)
					}

					for _, subject := range querySubjects {
						for _, kind := range append([]string{""}, modelTypes...) {
							got, found, err := s.LatestID(subject, kind)
							if err != nil {
								t.Fatal(err)
							}
							want, wantFound := modelLatest(model, subject, kind, n)
							if found != wantFound || got != want {
								t.Fatalf("%s: LatestID(%s, %q) = %d %v, want %d %v", served, subject, kind, got, found, want, wantFound)
							}
						}
					}
				}
			})
		}
	})
}

// checkGroups compares the groups of sc with the model's events.
func checkGroups(t *testing.T, s *store.Store, model []modelEvent, sc store.Scan) {
	t.Helper()
	var want []string
	for _, e := range model {
		subjectOK := sc.Subject == "" || e.subject == sc.Subject || (sc.Recursive && within(sc.Subject, e.subject))
		if subjectOK && e.id >= sc.From && e.id <= sc.To {
			want = append(want, fmt.Sprintf("%d %s %s", e.id, e.subject, e.kind))
		}
	}
	var got []string
	err := s.View().Groups(sc, func(subject, eventType string, ids []uint64) error {
		if !slices.IsSorted(ids) || len(ids) == 0 {
			t.Errorf("groups %+v: ids %v", sc, ids)
		}
		for _, id := range ids {
			got = append(got, fmt.Sprintf("%d %s %s", id, subject, eventType))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b string) int {
		var x, y uint64
		fmt.Sscan(a, &x)
		fmt.Sscan(b, &y)
		return int(x) - int(y)
	})
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("groups %+v:\n got %v\nwant %v", sc, got, want)
	}
}

func modelLatest(model []modelEvent, subject, kind string, limit uint64) (uint64, bool) {
	for i := len(model) - 1; i >= 0; i-- {
		e := model[i]
		if e.id < limit && e.subject == subject && (kind == "" || e.kind == kind) {
			return e.id, true
		}
	}
	return 0, false
}

// modelRead applies the read semantics of docs/api.md §4.4 to the model.
func modelRead(model []modelEvent, opts store.ReadOptions) string {
	lowest := uint64(0)
	if opts.FromLatest != nil {
		id, found := modelLatest(model, opts.FromLatest.Subject, opts.FromLatest.Type, uint64(len(model)))
		if !found && !opts.FromLatest.ReadEverything {
			return ""
		}
		if found {
			lowest = id
		}
	}
	var out []string
	for _, e := range model {
		subjectOK := e.subject == opts.Subject || (opts.Recursive && within(opts.Subject, e.subject))
		lowerOK := opts.Lower == nil || e.id > opts.Lower.ID || (opts.Lower.Inclusive && e.id == opts.Lower.ID)
		upperOK := opts.Upper == nil || e.id < opts.Upper.ID || (opts.Upper.Inclusive && e.id == opts.Upper.ID)
		if subjectOK && lowerOK && upperOK && e.id >= lowest {
			out = append(out, fmt.Sprint(e.id))
		}
	}
	if opts.Descending {
		slices.Reverse(out)
	}
	return strings.Join(out, ",")
}
