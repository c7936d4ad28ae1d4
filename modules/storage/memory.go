package storage

// Pebble's memory within a process memory limit: an eighth for the block
// cache and a sixteenth for each of the two memtables Pebble may hold, so
// that at most a quarter of the limit is Pebble's. (A quarter for the cache
// took the process to 278 MiB at a limit of 256 MiB under the bench's
// memory load and slowed queries by 40% to a squeezed Go heap; see
// docs/performance.md.) Without a limit, the sizes the figures in
// docs/performance.md were measured with.
const (
	defaultCache    = 128 << 20
	defaultMemtable = 64 << 20
	minCache        = 8 << 20
	minMemtable     = 4 << 20
	// memtables is how many memtables Pebble holds at most before it stops writes.
	memtables = 2
)

// PebbleMemory returns the sizes of Pebble's block cache and of one
// memtable within a process memory limit in bytes (0: no limit).
func PebbleMemory(limit int64) (cache, memtable int64) {
	if limit <= 0 {
		return defaultCache, defaultMemtable
	}
	return min(max(limit/8, minCache), defaultCache), min(max(limit/16, minMemtable), defaultMemtable)
}

// PebbleOffHeap returns the memory Pebble takes within limit outside the Go
// heap when the binary is built with cgo: its cache and memtables.
func PebbleOffHeap(limit int64) int64 {
	cache, memtable := PebbleMemory(limit)
	return cache + memtables*memtable
}
