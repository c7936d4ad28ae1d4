package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

var benchData = []byte(`{"amount":42,"currency":"EUR","customer":"c-000042","items":[{"qty":1,"sku":"a-1"},{"qty":3,"sku":"b-2"}],"note":"an ordinary event of a few hundred bytes"}`)

func benchCandidate(subject string) event.Candidate {
	return event.Candidate{Source: "https://bench", Subject: subject, Type: "io.example.bench", Data: benchData}
}

// BenchmarkWriteSingle measures writes of one event per request from 64
// concurrent writers, each on its own subject with isSubjectOnEventId on
// its previous event (group commit gathers them into one transaction).
func BenchmarkWriteSingle(b *testing.B) {
	s := node(b, pg.Database(b))
	var writers atomic.Int64
	b.SetParallelism(32) // × GOMAXPROCS 2: 64 writers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		subject := fmt.Sprintf("/bench/single/%d", writers.Add(1))
		records, err := s.Write(context.Background(), []event.Candidate{benchCandidate(subject)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		last := records[0].ID
		for pb.Next() {
			records, err := s.Write(context.Background(), []event.Candidate{benchCandidate(subject)},
				[]store.Precondition{{Kind: store.SubjectOnEventID, Subject: subject, EventID: last}})
			if err != nil {
				b.Fatal(err)
			}
			last = records[0].ID
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWriteBatch100 measures writes of 100 events (10 subjects) per
// request from 8 concurrent writers.
func BenchmarkWriteBatch100(b *testing.B) {
	s := node(b, pg.Database(b))
	batch := make([]event.Candidate, 100)
	for i := range batch {
		batch[i] = benchCandidate(fmt.Sprintf("/bench/batch/%d", i%10))
	}
	b.SetParallelism(4)
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

// BenchmarkReadSubject measures reading one subject of 100,000 events that
// are interleaved with as many events of other subjects, from storage.
func BenchmarkReadSubject(b *testing.B) {
	s := node(b, pg.Database(b))
	const n = 100_000
	batch := make([]event.Candidate, 1000)
	for written := 0; written < 2*n; written += len(batch) {
		for i := range batch {
			subject := "/bench/read"
			if i%2 == 1 {
				subject = fmt.Sprintf("/bench/other/%d", i%7)
			}
			batch[i] = benchCandidate(subject)
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
		it, err := s.Read(store.ReadOptions{Subject: "/bench/read", Upper: &store.Bound{ID: 2*n - 10_000}})
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for it.Next() {
			line = emitter.Append(line[:0], it.Record())
			count++
		}
		if err := it.Close(); err != nil || count != n-5000 {
			b.Fatalf("read %d events: %v", count, err)
		}
	}
	b.ReportMetric(float64(b.N*(n-5000))/b.Elapsed().Seconds(), "events/s")
}
