package store_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// manySchemas returns n schemas of distinct types, each of a few
// properties, as a registration would store them.
func manySchemas(n int) []store.SchemaWritten {
	out := make([]store.SchemaWritten, n)
	for i := range out {
		out[i] = store.SchemaWritten{
			Type: fmt.Sprintf("io.example.bench.type-%05d", i),
			Raw:  fmt.Appendf(nil, `{"type":"object","properties":{"n%d":{"type":"integer","minimum":0},"reason":{"type":"string","maxLength":200}},"required":["reason"],"additionalProperties":false}`, i),
		}
	}
	return out
}

// withSchemas returns an Opener of new Pebble storage that holds schemas
// and no event.
func withSchemas(t testing.TB, schemas []store.SchemaWritten) store.Opener {
	t.Helper()
	open := storetest.Pebble.New(t)
	b, err := open()
	if err != nil {
		t.Fatal(err)
	}
	storetest.Commit(t, b, store.Batch{State: storetest.SchemaRecords(schemas), Head: store.Head{LastHash: event.ZeroHash, Commits: 1, States: uint64(len(schemas))}})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return open
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStartWithSchemas measures the start of a store on Pebble that
// holds 10,000 schemas (and, for reference, none): ms/start is the time of
// Start, heap-bytes the live heap the started store adds.
func BenchmarkStartWithSchemas(b *testing.B) {
	for _, n := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("schemas=%d", n), func(b *testing.B) {
			open := withSchemas(b, manySchemas(n))
			var took time.Duration
			var heap uint64
			for b.Loop() {
				before := heapInUse()
				s := store.New(open, zap.NewNop(), nil, store.Memory{})
				start := time.Now()
				if err := s.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
				after := heapInUse()
				heap += after - min(before, after)
				if err := s.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(took.Seconds()*1000/float64(b.N), "ms/start")
			b.ReportMetric(float64(heap)/float64(b.N), "heap-bytes")
		})
	}
}
