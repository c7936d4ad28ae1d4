package backup_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/backup"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/restore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// BenchmarkRestore restores a backup of 100,000 events of a few hundred
// bytes into a new Pebble store: reading and proving every line ahead, in
// parallel with committing the events.
func BenchmarkRestore(b *testing.B) { benchRestore(b, true) }

// BenchmarkRestoreSerial proves and commits one after the other.
func BenchmarkRestoreSerial(b *testing.B) { benchRestore(b, false) }

// BenchmarkRead only reads and proves the lines of a backup: the part of
// a restore that is the Reader's.
func BenchmarkRead(b *testing.B) {
	const n = 100_000
	file := backupFile(b, n)
	b.SetBytes(int64(len(file)))
	b.ResetTimer()
	for range b.N {
		r := backup.NewReader(bytes.NewReader(file), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20})
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}

func benchRestore(b *testing.B, ahead bool) {
	const n = 100_000
	file := backupFile(b, n)
	b.SetBytes(int64(len(file)))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		target := storetest.Start(b, storetest.PebbleAt(b.TempDir(), nil))
		b.StartTimer()
		var src restore.Source = backup.NewReader(bytes.NewReader(file), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20})
		if ahead {
			src = backup.ReadAhead(src.(*backup.Reader))
		}
		if _, err := restore.Into(context.Background(), target, src, restore.Hooks{}, zap.NewNop()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		storetest.Close(b, target)
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}

// backupFile returns a backup of n events of a few hundred bytes on a
// thousand subjects.
func backupFile(b *testing.B, n int) []byte {
	source := storetest.Start(b, storetest.PebbleAt(b.TempDir(), nil))
	batch := make([]event.Candidate, 1000)
	for written := 0; written < n; written += len(batch) {
		for i := range batch {
			batch[i] = event.Candidate{Source: "https://bench.example", Subject: fmt.Sprintf("/bench/%d", (written+i)%1000), Type: "io.example.bench",
				Data: []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR","customer":"c-%06d","items":[{"qty":1,"sku":"a-1"}],"note":"an ordinary event of a few hundred bytes"}`, i, i))}
		}
		if _, err := source.Write(context.Background(), batch, nil); err != nil {
			b.Fatal(err)
		}
	}
	var file []byte
	var sc jsonscan.Scanner
	it := source.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for it.Next() {
		var err error
		if file, err = backup.AppendEvent(file, it.Record(), &sc, nil); err != nil {
			b.Fatal(err)
		}
	}
	it.Close()
	storetest.Close(b, source)
	return file
}
