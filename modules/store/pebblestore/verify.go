package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// VerifyCacheSize is the block cache to open a store with for an offline
// verification: one pass over the store gains nothing from a large cache,
// and a small one keeps memory flat and spares filling it (a fifth less
// CPU than with the service's 128 MiB).
const VerifyCacheSize = 16 << 20

// indexSpaces are the key spaces of the indexes, in the order they are
// checked; the constants below are their positions.
var indexSpaces = [...]byte{spaceExact, spaceTree, spaceSubjectType, spaceType}

const (
	exactIndex = iota
	treeIndex
	subjectTypeIndex
	typeIndex
)

// digest sums the entries of one index: their number and the sum of a
// keyed hash of each (prefix, id). Sums of the same entries are equal in
// any order; sums of different entries differ except with a probability
// of about 2⁻⁶⁴ per verification, the seed being random.
type digest struct {
	n, sum uint64
}

// add adds the entry of id under the prefix that hashes to prefixHash.
func (d *digest) add(seed maphash.Seed, prefixHash, id uint64) {
	d.n++
	d.sum += maphash.Comparable(seed, [2]uint64{prefixHash, id})
}

// indexVerifier checks the indexes in one store.Verify. CheckEvent sums the
// entries every event needs; Finish walks every posting of every index (in
// parallel, one goroutine per index) and sums the entries it finds. Where
// the sums agree, and every id of each prefix is listed once and in order,
// the index holds exactly the entries the events need. Where they do not,
// the index is walked once more, looking up the event of every entry, to
// name the first problem: an entry of a missing event, under the wrong
// prefix, twice, out of order, or the number of entries.
type indexVerifier struct {
	b        *Backend
	seed     maphash.Seed
	expected [len(indexSpaces)]digest
	count    uint64 // events verified
	// prefixes caches the index prefixes of recent subjects and types.
	prefixes map[names][]prefix
}

// names are an event's subject and type.
type names struct{ subject, eventType string }

// prefix is an index prefix: the index (of indexSpaces) and its hash.
type prefix struct {
	index int
	hash  uint64
}

// maxCachedNames bounds the subjects and types whose prefixes are cached.
const maxCachedNames = 4096

var _ store.IndexVerifiable = (*Backend)(nil)

// NewIndexVerifier returns the IndexVerifier of one store.Verify.
func (b *Backend) NewIndexVerifier() store.IndexVerifier {
	return &indexVerifier{b: b, seed: maphash.MakeSeed(), prefixes: map[names][]prefix{}}
}

// CheckEvent sums the index entries the event needs.
func (v *indexVerifier) CheckEvent(id uint64, subject, eventType string) error {
	key := names{subject, eventType}
	prefixes, ok := v.prefixes[key]
	if !ok {
		if len(v.prefixes) >= maxCachedNames {
			clear(v.prefixes)
		}
		prefixes = v.prefixesOf(subject, eventType)
		v.prefixes[key] = prefixes
	}
	for _, p := range prefixes {
		v.expected[p.index].add(v.seed, p.hash, id)
	}
	v.count = id + 1
	return nil
}

// prefixesOf returns the index prefixes of an event.
func (v *indexVerifier) prefixesOf(subject, eventType string) []prefix {
	out := []prefix{
		{exactIndex, maphash.Bytes(v.seed, exactPrefix(nil, subject))},
		{subjectTypeIndex, maphash.Bytes(v.seed, subjectTypePrefix(nil, subject, eventType))},
		{typeIndex, maphash.Bytes(v.seed, typePrefix(nil, eventType))},
	}
	for _, a := range ancestors(subject) {
		out = append(out, prefix{treeIndex, maphash.Bytes(v.seed, treePrefix(nil, a))})
	}
	return out
}

// Finish compares the indexes with the sums of the events, on a snapshot:
// entries of ids from the verified count up to the snapshot's head were
// committed during the verification and are left out.
func (v *indexVerifier) Finish() error {
	snap := v.b.db.NewSnapshot()
	defer snap.Close()
	head, err := readHead(snap)
	if err != nil {
		return err
	}
	w := indexWalk{snap: snap, verified: v.count, stored: head.Count}
	var (
		found [len(indexSpaces)]digest
		errs  [len(indexSpaces)]error
		wg    sync.WaitGroup
	)
	for i, space := range indexSpaces {
		wg.Go(func() { found[i], errs[i] = w.walk(space, v.seed, false) })
	}
	wg.Wait()
	for i, space := range indexSpaces {
		var corruption *store.CorruptionError
		switch {
		case errs[i] != nil && !errors.As(errs[i], &corruption):
			return errs[i]
		case errs[i] == nil && found[i] == v.expected[i]:
			continue
		}
		// Name the problem: the walk that looks up every entry's event.
		if _, err := w.walk(space, v.seed, true); err != nil {
			return err
		}
		if found[i].n != v.expected[i].n {
			return corrupt("index %q holds %d entries, the events need %d", []byte{space}, found[i].n, v.expected[i].n)
		}
		return corrupt("index %q holds other entries than the events need", []byte{space})
	}
	return nil
}

// indexWalk walks the indexes of a snapshot.
type indexWalk struct {
	snap     *pebble.Snapshot
	verified uint64 // events verified: entries of later ids are left out
	stored   uint64 // events in the snapshot: entries of later ids are problems
}

// walk sums the entries of space below the verified count, checking that
// every key is well formed, every id lies below the stored count, and the
// ids of each prefix strictly increase. With lookup, it also checks that
// every entry's event belongs under the entry's prefix.
func (w indexWalk) walk(space byte, seed maphash.Seed, lookup bool) (digest, error) {
	var d digest
	it, err := w.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{space}, UpperBound: []byte{space + 1}})
	if err != nil {
		return d, err
	}
	defer it.Close()
	var (
		ids        []uint64
		lastPrefix []byte
		prefixHash uint64
		lastID     uint64
	)
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		if len(key) < 10 {
			return d, corrupt("malformed index key %q", key)
		}
		prefix := key[:len(key)-8]
		if ids, err = decodePosting(ids[:0], idOf(key), it.Value()); err != nil {
			return d, corrupt("index key %q: %v", key, err)
		}
		samePrefix := bytes.Equal(prefix, lastPrefix)
		if !samePrefix {
			prefixHash = maphash.Bytes(seed, prefix)
		}
		for i, id := range ids {
			if id >= w.stored {
				return d, corrupt("index %q lists event %d beyond the log", prefix, id)
			}
			if (i > 0 || samePrefix) && id <= lastID {
				return d, corrupt("index %q lists event %d twice or out of order", prefix, id)
			}
			lastID = id
			if id >= w.verified {
				continue
			}
			if lookup {
				if err := w.checkEntry(space, prefix, id); err != nil {
					return d, err
				}
			}
			d.add(seed, prefixHash, id)
		}
		lastPrefix = append(lastPrefix[:0], prefix...)
	}
	return d, it.Error()
}

// checkEntry checks that event id belongs under prefix in space.
func (w indexWalk) checkEntry(space byte, prefix []byte, id uint64) error {
	value, closer, err := w.snap.Get(eventKey(nil, id))
	if errors.Is(err, pebble.ErrNotFound) {
		return corrupt("index %q lists the missing event %d", prefix, id)
	}
	if err != nil {
		return fmt.Errorf("read event %d: %w", id, err)
	}
	f, err := event.Decode(event.Record{ID: id, JSON: value})
	closer.Close()
	if err != nil {
		return corrupt("event %d: %v", id, err)
	}
	var want [][]byte
	switch space {
	case spaceExact:
		want = [][]byte{exactPrefix(nil, f.Subject)}
	case spaceSubjectType:
		want = [][]byte{subjectTypePrefix(nil, f.Subject, f.Type)}
	case spaceType:
		want = [][]byte{typePrefix(nil, f.Type)}
	case spaceTree:
		for _, a := range ancestors(f.Subject) {
			want = append(want, treePrefix(nil, a))
		}
	}
	if !slices.ContainsFunc(want, func(w []byte) bool { return bytes.Equal(w, prefix) }) {
		return corrupt("index %q lists event %d of %s (%s), which does not belong there", prefix, id, f.Subject, f.Type)
	}
	return nil
}

func corrupt(format string, args ...any) error {
	return &store.CorruptionError{Detail: fmt.Sprintf(format, args...)}
}
