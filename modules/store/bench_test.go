package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

var benchData = []byte(`{"amount":42,"currency":"EUR","customer":"c-000042","items":[{"qty":1,"sku":"a-1"},{"qty":3,"sku":"b-2"}],"note":"an ordinary event of a few hundred bytes"}`)

// benchWrites measures durable writes of batch per request from
// parallelism × GOMAXPROCS concurrent writers (group commit gathers them).
func benchWrites(b *testing.B, s *store.Store, batch []event.Candidate, parallelism int) {
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Write(context.Background(), batch, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
}

// batchOf returns 100 candidates of eventType on 10 subjects.
func batchOf(eventType string) []event.Candidate {
	batch := make([]event.Candidate, 100)
	for i := range batch {
		batch[i] = event.Candidate{Source: "https://bench", Subject: fmt.Sprintf("/bench/batch/%d", i%10), Type: eventType, Data: benchData}
	}
	return batch
}

// BenchmarkWriteSingle measures durable writes of one event per request
// from 64 concurrent writers.
func BenchmarkWriteSingle(b *testing.B) {
	storetest.EachB(b, &pg, func(b *testing.B, be storetest.Backend) {
		s := storetest.Start(b, be.New(b))
		single := []event.Candidate{{Source: "https://bench", Subject: "/bench/single", Type: "io.example.bench", Data: benchData}}
		benchWrites(b, s, single, 32)
	})
}

// BenchmarkWriteSingleOnEventID measures durable writes of one event per
// request from 64 concurrent writers, each on its own subject with
// isSubjectOnEventId on its previous event.
func BenchmarkWriteSingleOnEventID(b *testing.B) {
	storetest.EachB(b, &pg, func(b *testing.B, be storetest.Backend) {
		s := storetest.Start(b, be.New(b))
		var writers atomic.Int64
		b.SetParallelism(32)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			subject := fmt.Sprintf("/bench/single/%d", writers.Add(1))
			c := []event.Candidate{{Source: "https://bench", Subject: subject, Type: "io.example.bench", Data: benchData}}
			records, err := s.Write(context.Background(), c, nil)
			for pb.Next() && err == nil {
				pre := []store.Precondition{{Kind: store.SubjectOnEventID, Subject: subject, EventID: records[0].ID}}
				records, err = s.Write(context.Background(), c, pre)
			}
			if err != nil {
				b.Error(err)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkWriteBatch100 measures durable writes of 100 events per request
// from 8 concurrent writers.
func BenchmarkWriteBatch100(b *testing.B) {
	storetest.EachB(b, &pg, func(b *testing.B, be storetest.Backend) {
		benchWrites(b, storetest.Start(b, be.New(b)), batchOf("io.example.bench"), 4)
	})
}

// BenchmarkWriteBatch100Schema is BenchmarkWriteBatch100 on a type bound to
// a schema that every event matches.
func BenchmarkWriteBatch100Schema(b *testing.B) {
	s := storetest.Start(b, storetest.Pebble.New(b))
	sch := mustCompile(b, `{"type":"object","properties":{"amount":{"type":"integer","minimum":0},"currency":{"type":"string","enum":["EUR","USD"]},`+
		`"customer":{"type":"string","pattern":"^c-[0-9]+$"},"note":{"type":"string","maxLength":200},`+
		`"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},`+
		`"required":["amount","currency","customer","items"],"additionalProperties":false}`)
	if err := s.RegisterSchema(context.Background(), "io.example.validated", sch); err != nil {
		b.Fatal(err)
	}
	benchWrites(b, s, batchOf("io.example.validated"), 4)
}

// BenchmarkReadSubject measures reading one subject of 100,000 events that
// are interleaved with as many events of other subjects, from storage.
func BenchmarkReadSubject(b *testing.B) {
	storetest.EachB(b, &pg, func(b *testing.B, be storetest.Backend) {
		benchReadSubject(b, storetest.Start(b, be.New(b)))
	})
}

func benchReadSubject(b *testing.B, s *store.Store) {
	benchRead(b, s, store.ReadOptions{Subject: "/bench/read"}, func(i int) string {
		if i%2 == 1 {
			return fmt.Sprintf("/bench/other/%d", i%7)
		}
		return "/bench/read"
	})
}

// BenchmarkReadSubtree measures reading a subtree of 100,000 events, ten
// subjects written together, that are followed by as many events of other
// subjects, from storage: the read a subscription's drain makes.
func BenchmarkReadSubtree(b *testing.B) {
	storetest.EachB(b, &pg, func(b *testing.B, be storetest.Backend) {
		s := storetest.Start(b, be.New(b))
		benchRead(b, s, store.ReadOptions{Subject: "/bench/tree", Recursive: true}, func(i int) string {
			if i >= 100_000 {
				return fmt.Sprintf("/bench/other/%d", i%7)
			}
			return fmt.Sprintf("/bench/tree/%d", i%10)
		})
	})
}

// benchRead writes 200,000 events, the i-th to subject(i), and measures
// reading the 100,000 of them that opts selects.
func benchRead(b *testing.B, s *store.Store, opts store.ReadOptions, subject func(i int) string) {
	const n = 100_000
	batch := make([]event.Candidate, 1000)
	for written := 0; written < 2*n; written += len(batch) {
		for i := range batch {
			batch[i] = event.Candidate{Source: "https://bench", Subject: subject(written + i), Type: "io.example.bench", Data: benchData}
		}
		if _, err := s.Write(context.Background(), batch, nil); err != nil {
			b.Fatal(err)
		}
	}
	emitter := event.NewEmitter(nil)
	var line []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it, err := s.Read(opts)
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for it.Next() {
			line = emitter.Append(line[:0], it.Record())
			count++
		}
		if err := it.Close(); err != nil || count != n {
			b.Fatalf("read %d events: %v", count, err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
}
