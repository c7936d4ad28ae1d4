package pebblestore

import (
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/store"
)

// kindKeys remembers which kind keys of each data index hold postings, so
// that a lookup passes over those that hold none without a seek. A lookup
// reads up to four kind keys beside its value's (the events on which its
// comparison fails), and they mostly hold nothing: the values at a path
// are mostly of one kind. Pebble caches no blocks here (storage's
// PebbleMemory), so each seek, even of an empty key, reads and
// decompresses a block.
//
// A key is probed once, on its first lookup; a commit marks the kind keys
// of its postings before it applies them, so that a lookup that could see
// a posting knows the key holds one.
type kindKeys struct {
	mu   sync.Mutex
	held map[kindKey]bool // probed or marked: whether the key holds a posting
}

type kindKey struct {
	index uint64
	key   dataindex.Key
}

func newKindKeys() *kindKeys { return &kindKeys{held: map[kindKey]bool{}} }

// holds reports whether the kind key of index holds a posting, probing db
// the first time.
func (k *kindKeys) holds(db *pebble.DB, index uint64, key dataindex.Key) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock() // a probe under the lock: a commit's mark waits for it
	if held, known := k.held[kindKey{index, key}]; known {
		return held, nil
	}
	prefix := dataPrefix(nil, index, key)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return false, err
	}
	held := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, err
	}
	k.held[kindKey{index, key}] = held
	return held, nil
}

// mark notes the kind keys of postings as holding postings; a commit calls
// it before it applies them.
func (k *kindKeys) mark(postings []store.Posting) {
	for _, p := range postings {
		if !p.Key.IsKind() {
			continue
		}
		k.mu.Lock()
		k.held[kindKey{p.Index, p.Key}] = true
		k.mu.Unlock()
	}
}

// forget forgets what it knows of the indexes dropped (their ids never
// return), or of every index when dropped is nil (the store was emptied).
func (k *kindKeys) forget(dropped []uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if dropped == nil {
		clear(k.held)
		return
	}
	for key := range k.held {
		for _, id := range dropped {
			if key.index == id {
				delete(k.held, key)
			}
		}
	}
}

var _ store.KeyHolder = (*Backend)(nil)

// MayHold reports whether the key of the data index may hold a posting
// (store.KeyHolder): false for a kind key that holds none, and for a value
// key that the index's key filters know to hold none.
func (b *Backend) MayHold(index uint64, key dataindex.Key) (bool, error) {
	if key.IsKind() {
		return b.kinds.holds(b.db, index, key)
	}
	return b.absent.mayHold(b.db, index, key), nil
}
