package eventql

import (
	"strconv"
	"sync/atomic"
)

// MemoryPool is the memory all the queries of a service may hold at once
// in their blocking steps, beside each query's own budget, so that many
// queries within their budgets cannot exhaust the process's memory
// together. It is safe for concurrent use.
type MemoryPool struct {
	size int64
	used atomic.Int64
}

// NewMemoryPool returns a pool of size bytes.
func NewMemoryPool(size int64) *MemoryPool { return &MemoryPool{size: size} }

// take reserves n bytes, or fails when the pool is exhausted.
func (p *MemoryPool) take(n int64) error {
	if p.used.Add(n) > p.size {
		p.used.Add(-n)
		return &Error{Msg: "the memory of " + strconv.FormatInt(p.size, 10) + " bytes for all running queries is exhausted"}
	}
	return nil
}

// give returns n bytes.
func (p *MemoryPool) give(n int64) { p.used.Add(-n) }

// Used returns the bytes the running queries hold.
func (p *MemoryPool) Used() int64 { return p.used.Load() }
