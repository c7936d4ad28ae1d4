package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Dir is the subdirectory of a data directory that holds Pebble's files.
const Dir = "pebble"

// MemTables is how many memtables Pebble holds in steady state: the one
// written and the one a flush emptied, kept for reuse, or the one being
// flushed. Pebble reserves their size in its cache.
const MemTables = 2

// Options configure the backend.
type Options struct {
	// FS is the file system; the operating system's when nil. Tests pass
	// Pebble's crashable memory or error-injecting file systems.
	FS vfs.FS
	// ReadOnly opens the store for reading only (offline verification).
	ReadOnly bool
	// CacheSize is the size of Pebble's cache in bytes; 128 MiB when 0.
	// Pebble counts its memtables (MemTables of MemTableSize) against it,
	// so blocks are cached only in what they leave.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes; 64 MiB when 0.
	MemTableSize int64
	// MaxOpenFiles bounds the table files Pebble keeps open; Pebble's own
	// default (1,000) when 0.
	MaxOpenFiles int
	// KeyFilterBytes bounds the memory of the filters that tell the keys
	// of the data indexes that hold no posting; DefaultKeyFilterBytes
	// when 0.
	KeyFilterBytes int64
	// Format is the format version of the store in the directory, which
	// Open migrates to FormatVersion; 0 is FormatVersion (a new store).
	Format Format
}

// Backend is the Pebble storage backend. Only the store that opened it
// writes it, so a commit needs no lock and its head is the last one
// committed.
type Backend struct {
	db            *pebble.DB
	keyBuf        []byte      // scratch of commits, used by the writer goroutine only
	batchPostings *postings   // the postings of a commit, reused; writer goroutine only
	head          *store.Head // the last committed head, once known; writer goroutine only
	format        Format      // the format version of the store: FormatVersion, or older read-only
	kinds         *kindKeys   // which kind keys of the data indexes hold postings
	absent        *absentKeys // which value keys of the data indexes hold none
	purge         *purgeState // what Purge needs to know of erasures
	fs            vfs.FS
	dir           string
}

var _ store.Backend = (*Backend)(nil)

// Open opens (or creates) the store in dir, of format version opts.Format,
// and migrates it to FormatVersion. It fails with a *FormatError for a
// version it cannot open.
func Open(dir string, log *zap.Logger, opts Options) (*Backend, error) {
	if opts.Format == 0 {
		opts.Format = FormatVersion
	}
	if err := checkFormat(opts.Format); err != nil {
		return nil, err
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = 128 << 20
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = 64 << 20
	}
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref()
	pebbleOpts := &pebble.Options{
		FS:                 opts.FS,
		Cache:              cache,
		Logger:             newLogger(log, repeatInterval),
		ReadOnly:           opts.ReadOnly,
		MemTableSize:       uint64(opts.MemTableSize),
		MaxOpenFiles:       opts.MaxOpenFiles,
		FormatMajorVersion: pebbleFormat(opts.Format),
	}
	purge := &purgeState{}
	pebbleOpts.Experimental.ValueSeparationPolicy = purge.valueSeparation
	pebbleOpts.EventListener = &pebble.EventListener{WALCreated: purge.walCreated}
	if opts.FS == nil {
		pebbleOpts.FS = vfs.Default
	}
	pebbleOpts.FS = noReuseFS{FS: pebbleOpts.FS}
	var db *pebble.DB
	err := guarded(func() (err error) {
		if db, err = pebble.Open(dir, pebbleOpts); err != nil {
			return err
		}
		if opts.ReadOnly {
			return nil // read as it is (compat.go)
		}
		return migrate(db, opts.Format)
	})
	if err != nil {
		if db != nil {
			err = errors.Join(err, guarded(db.Close))
		}
		return nil, fmt.Errorf("open pebble store in %s: %w", dir, err)
	}
	switch {
	case opts.ReadOnly:
		opts.KeyFilterBytes = 0 // nothing is written: each lookup reads
	case opts.KeyFilterBytes == 0:
		opts.KeyFilterBytes = DefaultKeyFilterBytes
	}
	b := &Backend{db: db, batchPostings: newPostings(), format: FormatVersion, kinds: newKindKeys(), absent: newAbsentKeys(int(opts.KeyFilterBytes)),
		purge: purge, fs: pebbleOpts.FS, dir: dir}
	if opts.ReadOnly {
		b.format = opts.Format
		return b, nil
	}
	if err := guarded(b.resumePurge); err != nil {
		return nil, errors.Join(fmt.Errorf("open pebble store in %s: purge the data erased before it stopped: %w", dir, err), b.Close())
	}
	return b, nil
}

// Close closes the Pebble database, once a Purge under way has ended.
func (b *Backend) Close() error {
	b.purge.mu.Lock() // after a Purge under way
	b.purge.closed = true
	b.purge.mu.Unlock()
	b.absent.close()
	return guarded(b.db.Close)
}

// Head returns the committed head.
func (b *Backend) Head() (store.Head, error) {
	return readHead(b.db)
}

// readHead reads the head from r: the database or a snapshot of it.
func readHead(r pebble.Reader) (store.Head, error) {
	value, closer, err := r.Get(headKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return store.Head{LastHash: event.ZeroHash}, nil
	}
	if err != nil {
		return store.Head{}, fmt.Errorf("read head: %w", err)
	}
	defer closer.Close()
	head, err := decodeHead(value)
	if err != nil {
		return store.Head{}, err
	}
	_, restoring, err := r.Get(restoringKey)
	switch {
	case err == nil:
		head.Restoring = true
		restoring.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return store.Head{}, fmt.Errorf("read head: %w", err)
	}
	return head, nil
}

// Reset deletes every key, synced: the store is empty.
func (b *Backend) Reset() error {
	err := guarded(func() error {
		return b.db.DeleteRange([]byte{0}, []byte{0xff}, pebble.Sync)
	})
	b.kinds.forget(nil)
	b.absent.forget(nil)
	b.head = nil
	return err
}

// headSize is the size of the head record: count, last hash, last time,
// state changes; format version 1 had no state changes (headSizeV1).
const (
	headSize   = 8 + 32 + 8 + 8
	headSizeV1 = 8 + 32 + 8
)

func encodeHead(h store.Head) ([]byte, error) {
	hash, err := hex.DecodeString(h.LastHash)
	if err != nil || len(hash) != 32 {
		return nil, fmt.Errorf("head hash %q is not 64 hex digits", h.LastHash)
	}
	value := binary.BigEndian.AppendUint64(nil, h.Count)
	value = append(value, hash...)
	value = binary.BigEndian.AppendUint64(value, uint64(h.LastTime.UnixNano()))
	return binary.BigEndian.AppendUint64(value, h.States), nil
}

// decodeHead decodes a head record (without its Restoring mark); one of
// format version 1 gives States 0.
func decodeHead(value []byte) (store.Head, error) {
	if len(value) != headSize && len(value) != headSizeV1 {
		return store.Head{}, fmt.Errorf("head record has %d bytes, want %d", len(value), headSize)
	}
	head := store.Head{
		Count:    binary.BigEndian.Uint64(value[:8]),
		LastHash: hex.EncodeToString(value[8:40]),
		LastTime: time.Unix(0, int64(binary.BigEndian.Uint64(value[40:48]))).UTC(),
	}
	if len(value) == headSize {
		head.States = binary.BigEndian.Uint64(value[48:])
	}
	return head, nil
}

// Begin starts a commit after the last committed head, which only this
// store moves.
func (b *Backend) Begin(context.Context, uint64) (store.Tx, error) {
	if b.head == nil {
		head, err := b.Head()
		if err != nil {
			return nil, err
		}
		b.head = &head
	}
	return &tx{b: b, head: *b.head}, nil
}

// Shared returns false: nothing but this store writes the Pebble store.
func (b *Backend) Shared() bool { return false }

// Changes returns nil: the backend is not shared.
func (b *Backend) Changes() <-chan struct{} { return nil }

// ChangedSpaces does not tell: only this store changes the Pebble store.
func (b *Backend) ChangedSpaces(uint64) ([]string, bool, error) { return nil, false, nil }

// tx is a commit of the Pebble backend.
type tx struct {
	b    *Backend
	head store.Head
}

func (t *tx) Head() store.Head          { return t.head }
func (t *tx) Rollback()                 {}
func (t *tx) Followed() []store.Written { return nil }

// ChangedSpaces does not tell: only this store changes the Pebble store.
func (t *tx) ChangedSpaces(uint64) ([]string, bool) { return nil, false }

// Commit writes the records, their index entries, the feature state and
// the head in one synced batch.
func (t *tx) Commit(b store.Batch) error {
	if err := guarded(func() error { return t.b.commit(b) }); err != nil {
		return err
	}
	t.b.head = &b.Head
	return nil
}

func (b *Backend) commit(sb store.Batch) error {
	records, state, head := sb.Records, sb.State, sb.Head
	size := 64 + 24*(len(sb.Postings)+len(sb.Backfill))
	for _, r := range state {
		size += len(r.Space) + len(r.Key) + len(r.Value) + 16
	}
	for _, w := range records {
		size += len(w.Record.JSON) + 5*(len(w.Subject)+len(w.Type)+32)
	}
	batch := b.db.NewBatchWithSize(size)
	defer batch.Close()
	k := b.keyBuf
	index := b.batchPostings
	index.reset()
	for _, w := range records {
		id := w.Record.ID
		if err := batch.Set(eventKey(k[:0], id), w.Record.JSON, nil); err != nil {
			return err
		}
		if w.Kept != nil {
			if err := batch.Set(keptKey(k[:0], id), w.Kept[:], nil); err != nil {
				return err
			}
		}
		index.add(exactPrefix(k[:0], w.Subject), id)
		for i := 1; i < len(w.Subject); i++ {
			if w.Subject[i] == '/' { // a proper ancestor other than "/"
				index.add(treePrefix(k[:0], w.Subject[:i]), id)
			}
		}
		index.add(subjectTypePrefix(k[:0], w.Subject, w.Type), id)
		index.add(typePrefix(k[:0], w.Type), id)
	}
	// The postings of the records, and apart from them (a posting's ids
	// lie below the next one's first) those a build adds below.
	b.absent.applying.RLock() // from the marks until the batch is applied
	defer b.absent.applying.RUnlock()
	for _, postings := range [][]store.Posting{sb.Postings, sb.Backfill} {
		b.kinds.mark(postings)
		b.absent.mark(postings)
		for _, p := range postings {
			index.add(dataPrefix(k[:0], p.Index, p.Key), p.ID)
		}
		var err error
		if k, err = index.flush(batch, k); err != nil {
			return err
		}
	}
	if err := b.commitErasure(batch, sb.Erased, sb.Unposted); err != nil {
		return err
	}
	for _, id := range sb.Dropped { // after the postings: the batch's own go too
		prefix := dataIndexPrefix(nil, id)
		if err := batch.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
			return err
		}
	}
	if err := setState(batch, state); err != nil {
		return err
	}
	b.keyBuf = k
	headValue, err := encodeHead(head)
	if err != nil {
		return err
	}
	if err := batch.Set(headKey, headValue, nil); err != nil {
		return err
	}
	switch {
	case head.Restoring:
		err = batch.Set(restoringKey, nil, nil)
	case b.head != nil && b.head.Restoring:
		err = batch.Delete(restoringKey, nil)
	}
	if err != nil {
		return err
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return err
	}
	if len(sb.Dropped) > 0 {
		b.kinds.forget(sb.Dropped)
		b.absent.forget(sb.Dropped)
	}
	return nil
}

// Record returns the record with id.
func (b *Backend) Record(id uint64) (event.Record, bool, error) {
	value, closer, err := b.db.Get(eventKey(nil, id))
	if errors.Is(err, pebble.ErrNotFound) {
		return event.Record{}, false, nil
	}
	if err != nil {
		return event.Record{}, false, fmt.Errorf("read event %d: %w", id, err)
	}
	defer closer.Close()
	return event.Record{ID: id, JSON: bytes.Clone(value)}, true, nil
}

// LatestID returns the highest id up to maxID of an event with exactly
// subject (and eventType unless it is ""): the last posting that starts at
// or below maxID holds it.
func (b *Backend) LatestID(subject, eventType string, maxID uint64) (uint64, bool, error) {
	var prefix []byte
	if eventType == "" {
		prefix = exactPrefix(nil, subject)
	} else {
		prefix = subjectTypePrefix(nil, subject, eventType)
	}
	_, upper := idRange(prefix, 0, maxID)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, false, it.Error()
	}
	ids, err := decodePosting(nil, idOf(it.Key()), it.Value())
	if err != nil {
		return 0, false, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] <= maxID {
			return ids[i], true, nil
		}
	}
	return 0, false, nil
}

// SizeOnDisk returns the bytes of Pebble's files.
func (b *Backend) SizeOnDisk() (int64, error) {
	return int64(b.db.Metrics().DiskSpaceUsage()), nil
}
