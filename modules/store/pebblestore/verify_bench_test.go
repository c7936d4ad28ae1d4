package pebblestore

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// verifyBenchEvents is the size of the store BenchmarkVerify checks.
const verifyBenchEvents = 1_000_000

// rareSchema is the schema of the rare event type of the benchmark store.
const rareSchema = `{"type":"object","properties":{"amount":{"type":"integer","minimum":0},"currency":{"type":"string","enum":["EUR","USD"]},` +
	`"customer":{"type":"string","pattern":"^c-[0-9]+$"}},"required":["amount","currency","customer"]}`

// buildVerifyStore writes n events into a new store in dir through the
// store's writer, 10,000 per request, shaped like the store of `eventstore
// bench --scenario query`: ~230 bytes of data, each run of 1,000 on a
// subject of its own, one in a hundred of a rarer type (with a schema) on
// one subject.
func buildVerifyStore(b *testing.B, dir string, n int) {
	b.Helper()
	s := store.New(func() (store.Backend, error) { return Open(dir, zap.NewNop(), Options{}) }, zap.NewNop(), nil, store.Memory{})
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	sch, err := schema.Compile([]byte(rareSchema))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.RegisterSchema(ctx, "io.eventstore.bench.flagged", sch); err != nil {
		b.Fatal(err)
	}
	batch := make([]event.Candidate, 10_000)
	for written := 0; written < n; written += len(batch) {
		for i := range batch {
			id := written + i
			c := event.Candidate{Source: "https://bench.eventstore.example", Subject: fmt.Sprintf("/bench/common/%d", id/1000), Type: "io.eventstore.bench.event",
				Data: fmt.Appendf(nil, `{"amount":%d,"currency":"EUR","customer":"c-%06d","items":[{"qty":1,"sku":"a-1"},{"qty":3,"sku":"b-2"}],"note":"an ordinary event of a few hundred bytes"}`, id, id)}
			if id%100 == 99 {
				c.Subject, c.Type = "/bench/rare", "io.eventstore.bench.flagged"
			}
			batch[i] = c
		}
		if _, err := s.Write(ctx, batch[:min(len(batch), n-written)], nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkVerify times the verification of a store of 1,000,000 events,
// built once (see buildVerifyStore), as `eventstore verify` runs it.
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	buildVerifyStore(b, dir, verifyBenchEvents)
	b.Run("1M", func(b *testing.B) {
		backend, err := Open(dir, zap.NewNop(), Options{ReadOnly: true, CacheSize: VerifyCacheSize})
		if err != nil {
			b.Fatal(err)
		}
		defer backend.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			n, err := verify.Verify(context.Background(), backend, verify.Options{})
			if err != nil || n != verifyBenchEvents {
				b.Fatalf("verified %d events: %v", n, err)
			}
		}
		b.ReportMetric(float64(b.N*verifyBenchEvents)/b.Elapsed().Seconds(), "events/s")
	})
}
