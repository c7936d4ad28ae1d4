package eventql_test

import (
	"fmt"
	"runtime"
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
