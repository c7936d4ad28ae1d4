package storedb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/storedb"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// benchStore holds n events in batches of 1,000: one in a hundred of type
// io.example.rare on /rare, the others of io.example.common.
func benchStore(b *testing.B, n int) *store.Store {
	b.Helper()
	s := storetest.Start(b, storetest.PebbleAt(b.TempDir(), nil))
	b.Cleanup(func() { s.Close(context.Background()) })
	data := []byte(`{"amount":1,"currency":"EUR","customer":"c-000001","note":"an ordinary event of a few hundred bytes","items":[{"sku":"a-1","qty":1}]}`)
	for batch := 0; batch < n/1000; batch++ {
		cs := make([]event.Candidate, 1000)
		for i := range cs {
			cs[i] = event.Candidate{Source: "https://bench.example", Subject: fmt.Sprintf("/common/%d", batch), Type: "io.example.common", Data: data}
			if i%100 == 99 {
				cs[i].Subject, cs[i].Type = "/rare", "io.example.rare"
			}
		}
		if _, err := s.Write(context.Background(), cs, nil); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func benchQuery(b *testing.B, s *store.Store, query string, perRun int) {
	p, err := eventql.Compile(query)
	if err != nil {
		b.Fatal(err)
	}
	var out []byte
	b.ResetTimer()
	for range b.N {
		if _, err := p.Run(context.Background(), storedb.New(s.View(), emitter), eventql.Options{MemoryLimit: 1 << 28}, func(v eventql.Value) error {
			out = v.AppendJSON(out[:0])
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(perRun*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkQueryTypeIndex selects 1% of 200,000 events by type and emits
// them whole.
func BenchmarkQueryTypeIndex(b *testing.B) {
	benchQuery(b, benchStore(b, 200_000), `FROM e IN events WHERE e.type == "io.example.rare" PROJECT INTO e`, 2_000)
}

// BenchmarkQueryCount counts 200,000 events by a full scan.
func BenchmarkQueryCount(b *testing.B) {
	benchQuery(b, benchStore(b, 200_000), `FROM e IN events PROJECT INTO COUNT()`, 200_000)
}

// BenchmarkQueryFilter scans 200,000 events and tests a data field of each.
func BenchmarkQueryFilter(b *testing.B) {
	benchQuery(b, benchStore(b, 200_000), `FROM e IN events WHERE e.data.amount > 1 PROJECT INTO e.id`, 200_000)
}

// BenchmarkUnrelatedCondition is the fixed cost of a decision's
// precondition over a boundary that no event has (the public DCB
// benchmark's unrelated appends): compiling the query and evaluating it,
// with a data index on the tags, on a store of 100,000 tagged events.
func BenchmarkUnrelatedCondition(b *testing.B) {
	s := storetest.Start(b, storetest.PebbleAt(b.TempDir(), nil))
	b.Cleanup(func() { s.Close(context.Background()) })
	ctx := context.Background()
	for batch := range 100 {
		cs := make([]event.Candidate, 1000)
		for i := range cs {
			k := batch*1000 + i
			cs[i] = event.Candidate{Source: "https://bench.example", Subject: fmt.Sprintf("/students/%d", k/10), Type: "io.example.enrolled",
				Data: fmt.Appendf(nil, `{"tags":["course:%d","student:%d"]}`, k%10_000, k/10)}
		}
		if _, err := s.Write(ctx, cs, nil); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "tags", Path: "/tags", EventTypes: []string{"io.example.enrolled"}}); err != nil {
		b.Fatal(err)
	}
	waitReady(b, s)
	opts := eventql.Options{MemoryLimit: 1 << 26, TimeLimit: 5 * time.Second}
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		p, err := eventql.Compile(fmt.Sprintf(`FROM e IN events WHERE e.type == "io.example.enrolled" AND e.data.tags CONTAINS "course:fresh-%d" PROJECT INTO COUNT() == 0`, n))
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := storedb.NewCondition(p, emitter, opts).Holds(ctx, s.View()); err != nil || !ok {
			b.Fatalf("holds %v, %v", ok, err)
		}
	}
}
