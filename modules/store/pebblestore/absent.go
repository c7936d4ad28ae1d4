package pebblestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Sizes of the key filters: the first of an index holds firstFilterKeys
// keys at falsePositives, each next one twice as many as the one before.
const (
	firstFilterKeys = 1 << 16
	falsePositives  = 0.01
	// DefaultKeyFilterBytes bounds the memory of the key filters of all
	// data indexes unless Options.KeyFilterBytes says otherwise.
	DefaultKeyFilterBytes = 64 << 20
)

// absentKeys knows in memory which value keys of each data index hold no
// posting, so that a lookup of one (the fresh tag of an append that no
// event has yet) costs no seek: a seek for a key that is nowhere goes
// through every level of the tree, and Pebble caches no blocks here
// (storage's PebbleMemory), so it reads and decompresses a block or more
// of each.
//
// Per index, Bloom filters of the keys that hold postings: they never say
// that such a key holds none, and say so of ~99% of the others. An index's
// filters are made on its first lookup, from a scan of its entries in the
// background; until the scan has ended, its lookups seek. A commit adds its
// postings' keys before it applies them, and a scan starts only between
// commits (applying), so that no key escapes both. Beyond the bytes of
// limit, the filters that would grow are dropped and their lookups seek.
type absentKeys struct {
	applying sync.RWMutex // read-held by a commit from its mark to its apply
	mu       sync.Mutex
	filters  map[uint64]*keyFilter
	gone     map[uint64]bool // dropped indexes, whose ids never return
	bytes    int             // of every filter
	limit    int
	closed   bool
	scans    sync.WaitGroup
}

// keyFilter holds the keys of one index.
type keyFilter struct {
	ready   bool // the scan of the entries before it has ended
	off     bool // dropped: over the limit, failed, or its index was dropped
	blooms  []*bloom.BloomFilter
	room    uint // keys the last bloom holds at falsePositives
	added   uint // keys added to the last bloom
	scratch []byte
}

func newAbsentKeys(limit int) *absentKeys {
	return &absentKeys{filters: map[uint64]*keyFilter{}, gone: map[uint64]bool{}, limit: limit}
}

// filterKey is the part of a key's entries that names it: its length and
// its bytes, as in dataPrefix after the index.
func filterKey(dst []byte, key dataindex.Key) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(key))), key...)
}

// mayHold reports whether the value key of index may hold a posting: false
// only when the index's filters, complete, do not hold it. The first call
// for an index starts the scan that makes its filters.
func (a *absentKeys) mayHold(db *pebble.DB, index uint64, key dataindex.Key) bool {
	a.mu.Lock()
	f, known := a.filters[index]
	if known {
		defer a.mu.Unlock()
		if !f.ready || f.off {
			return true
		}
		f.scratch = filterKey(f.scratch[:0], key)
		for _, b := range f.blooms {
			if b.Test(f.scratch) {
				return true
			}
		}
		return false
	}
	a.mu.Unlock()
	a.start(db, index)
	return true
}

// start makes the filters of index and scans its entries into them in
// the background, from a snapshot taken between two commits.
func (a *absentKeys) start(db *pebble.DB, index uint64) {
	a.applying.Lock()
	defer a.applying.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, known := a.filters[index]; known || a.gone[index] || a.closed {
		return
	}
	f := &keyFilter{}
	a.filters[index] = f
	if !a.grow(f) {
		return
	}
	prefix := dataIndexPrefix(nil, index)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		a.drop(f)
		return
	}
	a.scans.Add(1)
	go a.scan(it, f, len(prefix))
}

// scan adds the keys of the entries of it to f, whose index's prefix is
// skip bytes long, a batch at a time, and then makes f ready.
func (a *absentKeys) scan(it *pebble.Iterator, f *keyFilter, skip int) {
	defer a.scans.Done()
	var names [][]byte
	var last []byte
	// flush adds the batch and tells whether f is still wanted.
	flush := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, name := range names {
			a.add(f, name)
		}
		names = names[:0]
		return !f.off
	}
	wanted := true
	for ok := it.First(); ok && wanted; ok = it.Next() {
		k := it.Key()
		if len(k) < skip+8 {
			continue
		}
		name := k[skip : len(k)-8] // without the index and the posting's first id
		if bytes.Equal(name, last) {
			continue // another posting of the same key
		}
		last = bytes.Clone(name)
		names = append(names, last)
		if len(names) == 1024 {
			wanted = flush()
		}
	}
	wanted = flush() && wanted
	err := errors.Join(it.Error(), it.Close())
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.drop(f)
		return
	}
	f.ready = wanted && !f.off
}

// add adds the key named name to f, growing it; false when f is off. The
// caller holds mu.
func (a *absentKeys) add(f *keyFilter, name []byte) bool {
	if f.off {
		return false
	}
	if f.added == f.room && !a.grow(f) {
		return false
	}
	f.blooms[len(f.blooms)-1].Add(name)
	f.added++
	return true
}

// grow adds a bloom to f of twice the keys of its last one, within the
// limit; past it, f is dropped. The caller holds mu.
func (a *absentKeys) grow(f *keyFilter) bool {
	room := uint(firstFilterKeys)
	if f.room > 0 {
		room = 2 * f.room
	}
	b := bloom.NewWithEstimates(room, falsePositives)
	size := int(b.Cap() / 8)
	if a.bytes+size > a.limit {
		a.drop(f)
		return false
	}
	f.blooms = append(f.blooms, b)
	f.room, f.added = room, 0
	a.bytes += size
	return true
}

// drop turns f off and frees its blooms. The caller holds mu.
func (a *absentKeys) drop(f *keyFilter) {
	for _, b := range f.blooms {
		a.bytes -= int(b.Cap() / 8)
	}
	f.blooms, f.off, f.ready = nil, true, false
}

// mark adds the value keys of postings to the filters of their indexes; a
// commit calls it, holding applying for reading, before it applies them.
func (a *absentKeys) mark(postings []store.Posting) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var name []byte
	for _, p := range postings {
		f := a.filters[p.Index]
		if f == nil || f.off || p.Key.IsKind() {
			continue
		}
		name = filterKey(name[:0], p.Key)
		a.add(f, name)
	}
}

// forget drops the filters of the indexes dropped (their ids never
// return), or of every index when dropped is nil (the store was emptied).
func (a *absentKeys) forget(dropped []uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, f := range a.filters {
		if dropped == nil || slices.Contains(dropped, id) {
			a.drop(f)
			delete(a.filters, id)
		}
	}
	if dropped == nil {
		clear(a.gone)
	}
	for _, id := range dropped {
		a.gone[id] = true // a reader that planned with it makes no filter of it again
	}
}

// close stops the scans and waits for them.
func (a *absentKeys) close() {
	a.mu.Lock()
	a.closed = true
	for _, f := range a.filters {
		a.drop(f)
	}
	a.mu.Unlock()
	a.scans.Wait()
}

// describe returns the filters' figures for diagnostics.
func (a *absentKeys) describe() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	ready := 0
	for _, f := range a.filters {
		if f.ready {
			ready++
		}
	}
	return map[string]any{"indexes": len(a.filters), "ready": ready, "bytes": a.bytes, "limitBytes": a.limit}
}
