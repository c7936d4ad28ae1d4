package storage

import (
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// Pebble's memory within a process memory limit: a sixteenth of the limit
// for each of its memtables. Without a limit, memtables of 64 MiB.
const (
	defaultMemtable = 64 << 20
	minMemtable     = 4 << 20
	// offHeapMemtables is how many memtables' worth of the limit the Go
	// heap leaves to Pebble: the MemTables it holds, a third while one is
	// flushed, and room for the C allocator and Pebble's other buffers.
	offHeapMemtables = 4
)

// PebbleMemory returns the size of Pebble's cache and of one memtable
// within a process memory limit in bytes (0: no limit). The cache is
// exactly the memtables' room, which Pebble counts against it, so no block
// is cached: reads come from the kernel's page cache. A block cache beside
// them was measured and not taken (docs/performance.md, "The block cache",
// has the figures): it made re-reads of a working set that fits it faster,
// but whole-store scans slower, and queries whose working set did not fit
// it slower too, for memory taken from the rest of the process.
func PebbleMemory(limit int64) (cache, memtable int64) {
	memtable = defaultMemtable
	if limit > 0 {
		memtable = min(max(limit/16, minMemtable), defaultMemtable)
	}
	return pebblestore.MemTables * memtable, memtable
}

// KeyFilterBytes returns the memory of the data indexes' key filters
// within a process memory limit in bytes (0: no limit, Pebble's default of
// 64 MiB): a sixty-fourth of the limit, at most the default.
func KeyFilterBytes(limit int64) int64 {
	if limit <= 0 {
		return pebblestore.DefaultKeyFilterBytes
	}
	return max(min(limit/64, pebblestore.DefaultKeyFilterBytes), 1)
}

// PebbleOffHeap returns the memory the Go heap leaves to Pebble within
// limit when the binary is built with cgo, where Pebble allocates its
// memtables outside the Go heap: a quarter of the limit.
func PebbleOffHeap(limit int64) int64 {
	_, memtable := PebbleMemory(limit)
	return offHeapMemtables * memtable
}

// latestEntryBytes is what the store's latest-id cache is taken to hold per
// subject: its LRU entry and map slot and the subject itself, rounded up
// generously so that long subjects fit it too (docs/performance.md counts
// the cache with the same figure).
const latestEntryBytes = 256

// StoreMemory returns the bounds of the store's caches within a process
// memory limit in bytes (0: no limit, the store's defaults): a sixteenth of
// the limit for the live window's records and a thirty-second for the
// latest-id cache, each at most its default (32 MiB, 100,000 subjects,
// reached at 512 MiB and ~780 MiB).
func StoreMemory(limit int64) store.Memory {
	if limit <= 0 {
		return store.Memory{}
	}
	return store.Memory{
		WindowBytes:    int(min(limit/16, store.DefaultWindowBytes)),
		LatestSubjects: int(min(limit/32/latestEntryBytes, store.DefaultLatestCacheSize)),
	}
}
