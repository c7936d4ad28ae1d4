package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventstore-service/eventstore/modules/health"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// figures is a store's figures set by the test.
type figures struct {
	writable    bool
	unreachable bool
	readOnly    bool
	size        int64
	sizeErr     error
	durable     uint64
}

func (f *figures) Writable() bool               { return f.writable }
func (f *figures) Unreachable() bool            { return f.unreachable }
func (f *figures) ReadOnly() bool               { return f.readOnly }
func (f *figures) Size() (int64, error)         { return f.size, f.sizeErr }
func (f *figures) Durable() uint64              { return f.durable }
func observe(c health.Check) health.Observation { return c.Observe(context.Background()) }

func TestHealthChecks(t *testing.T) {
	f := &figures{writable: true, size: 4096, durable: 7}
	checks := HealthChecks(f)
	keys := []string{"storage:writable", "storage:size", "storage:events", "mode"}
	types := []string{"datastore", "datastore", "datastore", "component"}
	for i, c := range checks {
		if c.Key != keys[i] || c.ComponentType != types[i] {
			t.Fatalf("check %d is %s (%s), want %s (%s)", i, c.Key, c.ComponentType, keys[i], types[i])
		}
	}
	if o := observe(checks[3]); o.Value != "read-write" || o.Status != health.Pass {
		t.Errorf("mode: %+v", o)
	}
	f.readOnly = true
	if o := observe(checks[3]); o.Value != "read-only" || o.Status != health.Pass {
		t.Errorf("mode in read-only mode: %+v", o)
	}
	if o := observe(checks[0]); o.Value != true || o.Status != health.Pass {
		t.Errorf("writable store: %+v", o)
	}
	if o := observe(checks[1]); o.Value != int64(4096) || o.Unit != "bytes" || o.Status != health.Pass {
		t.Errorf("size: %+v", o)
	}
	if o := observe(checks[2]); o.Value != uint64(7) || o.Status != health.Pass {
		t.Errorf("events: %+v", o)
	}

	f.writable, f.sizeErr = false, errors.New("stat failed")
	if o := observe(checks[0]); o.Value != false || o.Status != health.Fail || o.Output != "storage not writable" {
		t.Errorf("failed store: %+v", o)
	}
	if o := observe(checks[1]); o.Status != health.Warn || o.Output != "size unknown: stat failed" {
		t.Errorf("size unknown: %+v", o)
	}
	f.unreachable = true
	if o := observe(checks[0]); o.Value != false || o.Status != health.Fail || o.Output != "storage unreachable" {
		t.Errorf("unreachable storage: %+v", o)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := &figures{writable: true, size: 100, durable: 3}
	if err := RegisterGauges(reg, f); err != nil {
		t.Fatal(err)
	}
	m.Committed(3, 2*time.Millisecond)
	m.Acknowledged(3 * time.Millisecond)
	want := `
# HELP eventstore_read_only 1 in read-only mode, else 0.
# TYPE eventstore_read_only gauge
eventstore_read_only 0
# HELP eventstore_events_written_total Events committed.
# TYPE eventstore_events_written_total counter
eventstore_events_written_total 3
# HELP eventstore_storage_events Number of durable events.
# TYPE eventstore_storage_events gauge
eventstore_storage_events 3
# HELP eventstore_storage_head_id Id of the last durable event, -1 when the store is empty.
# TYPE eventstore_storage_head_id gauge
eventstore_storage_head_id 2
# HELP eventstore_storage_size_bytes Bytes the store occupies on disk (at most 10 s old).
# TYPE eventstore_storage_size_bytes gauge
eventstore_storage_size_bytes 100
# HELP eventstore_storage_writable 1 while the store accepts writes, 0 after a failure or while shutting down.
# TYPE eventstore_storage_writable gauge
eventstore_storage_writable 1
`
	names := []string{"eventstore_events_written_total", "eventstore_storage_events", "eventstore_storage_head_id",
		"eventstore_storage_size_bytes", "eventstore_storage_writable", "eventstore_read_only"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "eventstore_write_duration_seconds", "eventstore_storage_sync_duration_seconds"); n != 2 {
		t.Fatalf("%d duration histograms, want 2", n)
	}

	f.writable = false
	unwritable := `
# HELP eventstore_storage_writable 1 while the store accepts writes, 0 after a failure or while shutting down.
# TYPE eventstore_storage_writable gauge
eventstore_storage_writable 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(unwritable), "eventstore_storage_writable"); err != nil {
		t.Fatal(err)
	}
}

func TestPebbleMemoryWithinTheLimit(t *testing.T) {
	for _, c := range []struct{ limit, cache, memtable int64 }{
		{0, 128 << 20, 64 << 20},
		{256 << 20, 32 << 20, 16 << 20},
		{921 << 20, (921 << 20) / 8, (921 << 20) / 16},
		{32 << 20, 8 << 20, 4 << 20},
		{2 << 30, 128 << 20, 64 << 20},
	} {
		cache, memtable := PebbleMemory(c.limit)
		if cache != c.cache || memtable != c.memtable {
			t.Errorf("limit %d: cache %d, memtable %d; want %d, %d", c.limit, cache, memtable, c.cache, c.memtable)
		}
		if c.limit > 0 && PebbleOffHeap(c.limit) > c.limit/2 {
			t.Errorf("limit %d: Pebble takes %d off the heap, more than half", c.limit, PebbleOffHeap(c.limit))
		}
	}
}

func TestStoreMemoryWithinTheLimit(t *testing.T) {
	for _, c := range []struct {
		limit int64
		want  store.Memory
	}{
		{0, store.Memory{}},
		{64 << 20, store.Memory{WindowBytes: 4 << 20, LatestSubjects: 8192}},
		{256 << 20, store.Memory{WindowBytes: 16 << 20, LatestSubjects: 32768}},
		{921 << 20, store.Memory{WindowBytes: store.DefaultWindowBytes, LatestSubjects: store.DefaultLatestCacheSize}},
	} {
		got := StoreMemory(c.limit)
		if got != c.want {
			t.Errorf("limit %d: %+v, want %+v", c.limit, got, c.want)
		}
		if c.limit > 0 && int64(got.WindowBytes+got.LatestSubjects*latestEntryBytes) > c.limit/8 {
			t.Errorf("limit %d: the store's caches take %+v, more than an eighth", c.limit, got)
		}
	}
}

func TestKeyFilterBytesWithinTheLimit(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{0, pebblestore.DefaultKeyFilterBytes},
		{256 << 20, 4 << 20},
		{8 << 30, pebblestore.DefaultKeyFilterBytes},
	} {
		if got := KeyFilterBytes(c.limit); got != c.want {
			t.Errorf("limit %d: %d, want %d", c.limit, got, c.want)
		}
	}
}
