package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// An erasure (docs/api.md §4.16) commits the erased records over the old
// ones, the digests of their data under k <id>, and its postings' removal,
// in one batch. The old bytes are then still in Pebble's files: in the
// WAL the commits went through, in tables and in blob files. Purge takes
// them out:
//
//  1. a flush moves the memtables into tables and leaves the WAL files
//     that held them obsolete; Purge empties every one of those that
//     Pebble keeps for reuse or has not deleted yet;
//  2. a manual compaction of the erased keys' ranges rewrites the tables
//     that held old versions of them, or tombstones of the removed
//     postings (which carry the erased values in their keys), without them;
//  3. the blob files that held the old records now hold garbage: while
//     Purge runs, the value separation policy asks Pebble to rewrite every
//     blob file with garbage, and Purge waits until none is left and no
//     obsolete table or blob file remains on disk.
//
// Open readers keep the files they read (zombies) until they close; Purge
// waits for them too.
//
// The key ranges to purge are kept under m purge, written in the batch of
// the erasure and deleted once a Purge is done with them: a store stopped
// before (kill -9 between the commit and the answer) purges them when it
// opens again.

// spaceKept holds the digests of erased events' original data: k <id>.
const spaceKept = 'k'

// purgeKey holds the key ranges that erasures changed and no Purge has
// cleaned yet.
var purgeKey = []byte{spaceMeta, 'p', 'u', 'r', 'g', 'e'}

func keptKey(dst []byte, id uint64) []byte { return appendID(append(dst, spaceKept), id) }

// purgeState is what Purge needs to know of the commits of erasures.
type purgeState struct {
	mu      sync.Mutex // serializes Purge, and Close waits on it
	closed  bool       // set by Close, under mu
	pending struct {
		sync.Mutex
		ranges [][2][]byte // key ranges erasures changed since the last Purge
	}
	rewriting atomic.Bool   // while Purge waits for blob rewrites
	lastWAL   atomic.Uint64 // the file number of the newest WAL
}

// walCreated tracks the newest WAL.
func (p *purgeState) walCreated(info pebble.WALCreateInfo) {
	if info.Err == nil {
		p.lastWAL.Store(uint64(info.FileNum))
	}
}

// KeptDataSum returns the digest kept for the erased event id.
func (b *Backend) KeptDataSum(id uint64) (event.DataSum, bool, error) {
	var sum event.DataSum
	value, closer, err := b.db.Get(keptKey(nil, id))
	if errors.Is(err, pebble.ErrNotFound) {
		return sum, false, nil
	}
	if err != nil {
		return sum, false, fmt.Errorf("read the kept digest of event %d: %w", id, err)
	}
	defer closer.Close()
	if len(value) != len(sum) {
		return sum, false, fmt.Errorf("the kept digest of event %d has %d bytes", id, len(value))
	}
	copy(sum[:], value)
	return sum, true, nil
}

// erasedEvents counts the erased events (their kept digests), -1 when
// they cannot be read.
func (b *Backend) erasedEvents() int64 {
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceKept}, UpperBound: []byte{spaceKept + 1}})
	if err != nil {
		return -1
	}
	defer it.Close()
	var n int64
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if it.Error() != nil {
		return -1
	}
	return n
}

// commitErasure adds the erased records, their digests and the removal of
// their postings to batch, and notes the ranges Purge compacts.
func (b *Backend) commitErasure(batch *pebble.Batch, erased []store.ErasedRecord, unposted []store.Posting) error {
	if len(erased) == 0 {
		return nil
	}
	var ranges [][2][]byte
	for _, e := range erased {
		id := e.Record.ID
		if err := batch.Set(eventKey(nil, id), e.Record.JSON, nil); err != nil {
			return err
		}
		if err := batch.Set(keptKey(nil, id), e.DataSum[:], nil); err != nil {
			return err
		}
		if n := len(ranges); n > 0 && bytes.Equal(ranges[n-1][1], eventKey(nil, id)) {
			ranges[n-1][1] = eventKey(nil, id+1)
		} else {
			ranges = append(ranges, [2][]byte{eventKey(nil, id), eventKey(nil, id+1)})
		}
	}
	// The postings of a key are groups under <prefix> <first id>: each
	// group that holds a removed id is written again without it.
	groups := map[string][]uint64{} // group key → ids removed
	for _, p := range unposted {
		prefix := dataPrefix(nil, p.Index, p.Key)
		key, err := b.groupOf(prefix, p.ID)
		if err != nil {
			return err
		}
		if key == nil {
			continue
		}
		// The range of the whole index: a key's own range would carry the
		// erased value into purgeKey.
		whole := dataIndexPrefix(nil, p.Index)
		ranges = append(ranges, [2][]byte{whole, prefixEnd(whole)})
		groups[string(key)] = append(groups[string(key)], p.ID)
	}
	for key, removed := range groups {
		if err := b.rewriteGroup(batch, []byte(key), removed); err != nil {
			return err
		}
	}
	b.purge.pending.Lock()
	defer b.purge.pending.Unlock()
	b.purge.pending.ranges = spans(append(b.purge.pending.ranges, ranges...))
	return batch.Set(purgeKey, encodeRanges(b.purge.pending.ranges), nil)
}

// encodeRanges encodes key ranges as their bounds, each with its length.
func encodeRanges(ranges [][2][]byte) []byte {
	var out []byte
	for _, r := range ranges {
		for _, key := range r {
			out = binary.AppendUvarint(out, uint64(len(key)))
			out = append(out, key...)
		}
	}
	return out
}

// decodeRanges decodes what encodeRanges encoded.
func decodeRanges(value []byte) ([][2][]byte, error) {
	var keys [][]byte
	for len(value) > 0 {
		n, k := binary.Uvarint(value)
		if k <= 0 || uint64(len(value)-k) < n {
			return nil, errors.New("malformed purge ranges")
		}
		keys = append(keys, bytes.Clone(value[k:k+int(n)]))
		value = value[k+int(n):]
	}
	if len(keys)%2 != 0 {
		return nil, errors.New("malformed purge ranges")
	}
	ranges := make([][2][]byte, 0, len(keys)/2)
	for i := 0; i < len(keys); i += 2 {
		ranges = append(ranges, [2][]byte{keys[i], keys[i+1]})
	}
	return ranges, nil
}

// resumePurge purges what the erasures committed before the store last
// stopped left: called by Open.
func (b *Backend) resumePurge() error {
	value, closer, err := b.db.Get(purgeKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ranges, err := decodeRanges(value)
	closer.Close()
	if err != nil {
		return err
	}
	b.purge.pending.Lock()
	b.purge.pending.ranges = ranges
	b.purge.pending.Unlock()
	return b.Purge(context.Background())
}

// groupOf returns the key of the posting group of prefix that holds id,
// nil when none does.
func (b *Backend) groupOf(prefix []byte, id uint64) ([]byte, error) {
	_, upper := idRange(prefix, 0, id)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if !it.Last() {
		return nil, it.Error()
	}
	if len(it.Key()) != len(prefix)+8 { // a longer key of another prefix
		return nil, it.Error()
	}
	ids, err := decodePosting(nil, idOf(it.Key()), it.Value())
	if err != nil || !slices.Contains(ids, id) {
		return nil, err
	}
	return slices.Clone(it.Key()), nil
}

// rewriteGroup writes the posting group at key again without the ids
// removed.
func (b *Backend) rewriteGroup(batch *pebble.Batch, key []byte, removed []uint64) error {
	value, closer, err := b.db.Get(key)
	if err != nil {
		return fmt.Errorf("read posting: %w", err)
	}
	ids, err := decodePosting(nil, idOf(key), value)
	closer.Close()
	if err != nil {
		return err
	}
	ids = slices.DeleteFunc(ids, func(id uint64) bool { return slices.Contains(removed, id) })
	if err := batch.Delete(key, nil); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	prefix := key[:len(key)-8]
	return batch.Set(appendID(slices.Clone(prefix), ids[0]), postingValue(nil, ids), nil)
}

// purgePoll is how often Purge looks whether Pebble's files are clean.
const purgePoll = 20 * time.Millisecond

// Purge removes the erased bytes from Pebble's files (see above).
// A Purge that fails, or whose ctx ends while it waits for Pebble, leaves
// its ranges to the next one (and to purgeKey, for the next Open).
func (b *Backend) Purge(ctx context.Context) (err error) {
	b.purge.mu.Lock()
	defer b.purge.mu.Unlock()
	if b.purge.closed {
		return store.ErrClosed
	}
	b.purge.pending.Lock()
	ranges := b.purge.pending.ranges
	b.purge.pending.ranges = nil
	b.purge.pending.Unlock()
	if len(ranges) == 0 {
		return nil
	}
	defer func() {
		if err != nil {
			b.purge.pending.Lock()
			b.purge.pending.ranges = spans(append(b.purge.pending.ranges, ranges...))
			b.purge.pending.Unlock()
		}
	}()
	b.purge.rewriting.Store(true)
	defer b.purge.rewriting.Store(false)
	newest := b.purge.lastWAL.Load()
	if err := b.db.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := b.emptyObsoleteWALs(newest); err != nil {
		return err
	}
	for _, r := range spans(ranges) {
		if err := b.db.Compact(ctx, r[0], r[1], false); err != nil {
			return fmt.Errorf("compact: %w", err)
		}
	}
	for {
		m := b.db.Metrics()
		if m.BlobFiles.ValueSize == m.BlobFiles.ReferencedValueSize && m.BlobFiles.ZombieCount == 0 && m.BlobFiles.ObsoleteCount == 0 &&
			m.Table.ZombieCount == 0 && m.Table.ObsoleteCount == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(purgePoll):
		}
	}
	// Done with the ranges, unless an erasure committed meanwhile added
	// some (its batch wrote them to purgeKey, which stays).
	b.purge.pending.Lock()
	defer b.purge.pending.Unlock()
	if len(b.purge.pending.ranges) > 0 {
		return nil
	}
	return b.db.Delete(purgeKey, pebble.Sync)
}

// emptyObsoleteWALs overwrites with zeros the WAL files up to the number
// newest, which a flush made obsolete: Pebble may keep them for reuse, and
// a reused file would be written over only as far as new records reach,
// so their old records would otherwise stay readable. The file system of
// the backend (noReuseFS) never hands such a file back to Pebble as a new
// WAL, so the zeros can never land on records written after the flush.
func (b *Backend) emptyObsoleteWALs(newest uint64) error {
	names, err := b.fs.List(b.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", b.dir, err)
	}
	for _, name := range names {
		num, ok := strings.CutSuffix(name, ".log")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil || n > newest {
			continue
		}
		if err := zeroFile(b.fs, b.fs.PathJoin(b.dir, name)); err != nil {
			return fmt.Errorf("empty the obsolete WAL %s: %w", name, err)
		}
	}
	return nil
}

// zeroFile overwrites the file at path with zeros; a file deleted
// meanwhile is left alone.
func zeroFile(fs vfs.FS, path string) error {
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		return errors.Join(err, f.Close())
	}
	zeros := make([]byte, min(info.Size(), 1<<20))
	for off := int64(0); off < info.Size(); off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), info.Size()-off)], off); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(f.Sync(), f.Close())
}

// noReuseFS is the file system of the backend: the operating system's (or
// a test's) except that a WAL file Pebble kept for reuse is deleted, and
// the new WAL created afresh, instead of renamed into the new WAL. A
// reused file's inode would carry the new WAL while Purge may be writing
// zeros over the obsolete file it opened by its old name.
type noReuseFS struct{ vfs.FS }

// ReuseForWrite removes oldname and creates newname: the contract of
// ReuseForWrite allows it, and Pebble stats the file it gets.
func (fs noReuseFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.FS.Remove(oldname); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return nil, err
	}
	return fs.FS.Create(newname, category)
}

// Unwrap returns the file system noReuseFS wraps.
func (fs noReuseFS) Unwrap() vfs.FS { return fs.FS }

// spans returns one range per key space that covers the ranges of that
// space: one compaction of a span costs less than one per erased event
// where the events lie apart.
func spans(ranges [][2][]byte) [][2][]byte {
	if len(ranges) == 0 {
		return nil
	}
	slices.SortFunc(ranges, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	out := ranges[:1]
	for _, r := range ranges[1:] {
		last := &out[len(out)-1]
		if r[0][0] == last[0][0] {
			if bytes.Compare(r[1], last[1]) > 0 {
				last[1] = r[1]
			}
			continue
		}
		out = append(out, r)
	}
	return out
}
