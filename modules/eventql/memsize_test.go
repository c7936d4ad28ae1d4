package eventql_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// TestMemoryChargedAsAllocated runs blocking steps over 20,000 events and
// compares the memory the query charged with the heap it really holds once
// the step has all its rows (measured after a GC, when the first row comes
// out of a sort or a grouping): the budget must stand for real memory,
// neither far below it (an out-of-memory kill inside the budget) nor far
// above. DISTINCT and subqueries charge their values the same way.
func TestMemoryChargedAsAllocated(t *testing.T) {
	const n = 20_000
	candidates := make([]eventqltest.Candidate, n)
	for i := range candidates {
		candidates[i] = eventqltest.Candidate{Source: "https://x.example", Subject: fmt.Sprintf("/s/%d", i%100), Type: "io.example.x",
			Data: []byte(fmt.Sprintf(`{"n":%d,"note":"an ordinary event of a few hundred bytes, with some text in it","tags":["a","b","c"]}`, i))}
	}
	db, err := eventqltest.NewMemDB(candidates)
	if err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{
		`FROM e IN events ORDER BY e.data.n DESC PROJECT INTO e`,
		`FROM e IN events ORDER BY e.data.n PROJECT INTO {n: e.data.n, note: e.data.note, tags: e.data.tags}`,
		`FROM e IN events GROUP BY e.data.n PROJECT INTO {count: COUNT(), last: MAX(e.id), first: MIN(e.time)}`,
		`FROM e IN events GROUP BY e.subject PROJECT INTO {values: MEDIAN(e.data.n), unique: UNIQUE(e.type)}`,
	} {
		p, err := eventql.Compile(query)
		if err != nil {
			t.Fatal(err)
		}
		var before, held runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rows := 0
		stats, err := p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1 << 30}, func(eventql.Value) error {
			if rows++; rows == 1 {
				runtime.GC()
				runtime.ReadMemStats(&held)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		real := int64(held.HeapAlloc) - int64(before.HeapAlloc)
		ratio := float64(stats.MemoryPeak) / float64(real)
		t.Logf("%s: charged %d, held %d (%.2f)", query, stats.MemoryPeak, real, ratio)
		if ratio < 0.8 || ratio > 2 {
			t.Errorf("%s: charged %d bytes for %d held (ratio %.2f, want 0.8–2)", query, stats.MemoryPeak, real, ratio)
		}
	}
}

// TestMemoryPoolIsShared runs two sorting queries on one pool that holds
// only one of them: the second fails while the first holds its rows, and
// every byte goes back to the pool when the runs end.
func TestMemoryPoolIsShared(t *testing.T) {
	candidates := make([]eventqltest.Candidate, 2000)
	for i := range candidates {
		candidates[i] = eventqltest.Candidate{Source: "https://x.example", Subject: "/s", Type: "io.example.x", Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	db, err := eventqltest.NewMemDB(candidates)
	if err != nil {
		t.Fatal(err)
	}
	p, err := eventql.Compile(`FROM e IN events ORDER BY e.data.n DESC PROJECT INTO e.id`)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := p.Run(t.Context(), db, eventql.Options{}, func(eventql.Value) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	pool := eventql.NewMemoryPool(alone.MemoryPeak * 3 / 2)
	opts := eventql.Options{MemoryLimit: 1 << 30, Pool: pool}
	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		rows := 0
		_, err := p.Run(t.Context(), db, opts, func(eventql.Value) error {
			if rows++; rows == 1 {
				close(holding)
				<-release
			}
			return nil
		})
		first <- err
	}()
	<-holding
	_, err = p.Run(t.Context(), db, opts, func(eventql.Value) error { return nil })
	var qe *eventql.Error
	if !errors.As(err, &qe) || !strings.Contains(qe.Error(), "for all running queries is exhausted") {
		t.Fatalf("the second query beside the first: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first query: %v", err)
	}
	if used := pool.Used(); used != 0 {
		t.Fatalf("%d bytes left taken from the pool", used)
	}
	if _, err := p.Run(t.Context(), db, opts, func(eventql.Value) error { return nil }); err != nil {
		t.Fatalf("a query after the first ended: %v", err)
	}
}
