package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// TestRecordsLiveInBlobFiles writes events through many flushes, compacts
// the store and reads every record back: the records are in blob files,
// outside the tables, and the store verifies. Pebble opened without the
// policy, as the releases before it did, reads them too.
func TestRecordsLiveInBlobFiles(t *testing.T) {
	const n, batch = 4000, 100
	dir := t.TempDir()
	small := Options{MemTableSize: 256 << 10} // a flush every ~400 events
	s := store.New(func() (store.Backend, error) { return Open(dir, zap.NewNop(), small) }, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	padding := strings.Repeat("x", 300)
	var written []event.Record
	for i := 0; i < n; i += batch {
		var cs []event.Candidate
		for j := i; j < i+batch; j++ {
			cs = append(cs, event.Candidate{Source: "https://x", Subject: fmt.Sprintf("/a/%d", j%7), Type: "io.example.thing",
				Data: []byte(fmt.Sprintf(`{"i":%d,"padding":%q}`, j, padding))})
		}
		records, err := s.Write(context.Background(), cs, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records {
			written = append(written, event.Record{ID: r.ID, JSON: bytes.Clone(r.JSON)})
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	b, err := Open(dir, zap.NewNop(), small)
	if err != nil {
		t.Fatal(err)
	}
	must(t, b.db.Flush())
	must(t, b.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false))
	m := b.db.Metrics()
	if m.BlobFiles.LiveCount == 0 || m.BlobFiles.ReferencedValueSize < n*300 {
		t.Fatalf("blob files: %d holding %d bytes of values, want the records (more than %d bytes)", m.BlobFiles.LiveCount, m.BlobFiles.ReferencedValueSize, n*300)
	}
	if tables := m.Total().TablesSize; tables >= int64(m.BlobFiles.ReferencedValueSize)/2 {
		t.Fatalf("tables of %d bytes beside %d bytes of values in blob files: the records are in the tables", tables, m.BlobFiles.ReferencedValueSize)
	}
	for _, want := range written {
		got, found, err := b.Record(want.ID)
		if err != nil || !found || !bytes.Equal(got.JSON, want.JSON) {
			t.Fatalf("record %d: %q, %v, %v; want %q", want.ID, got.JSON, found, err, want.JSON)
		}
	}
	must(t, b.Close())

	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebbleFormat(FormatVersion)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range written {
		got, closer, err := db.Get(eventKey(nil, want.ID))
		if err != nil {
			t.Fatalf("record %d without the policy: %v", want.ID, err)
		}
		if !bytes.Equal(got, want.JSON) {
			t.Fatalf("record %d without the policy: %q, want %q", want.ID, got, want.JSON)
		}
		must(t, closer.Close())
	}
	must(t, db.Close())
	if count, err := verifyWith(t, dir, verify.Options{}); err != nil || count != n {
		t.Fatalf("verify: %d events, %v; want %d", count, err, n)
	}
}
