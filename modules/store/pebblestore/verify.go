package pebblestore

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// indexSpaces are the key spaces of the indexes.
var indexSpaces = []byte{spaceExact, spaceTree, spaceSubjectType, spaceType}

// Verifier checks the indexes: every id in every posting names an existing
// event that belongs under the posting's prefix, the ids of each prefix
// strictly increase (so none appears twice), and each index holds exactly as
// many ids as the events need.
type Verifier struct {
	*Backend
	expected map[byte]uint64
	count    uint64
}

var _ store.IndexVerifier = (*Verifier)(nil)

// NewVerifier returns a Verifier over b, to pass to store.Verify.
func NewVerifier(b *Backend) *Verifier {
	return &Verifier{Backend: b, expected: map[byte]uint64{}}
}

// CheckEvent counts the index entries the event needs.
func (v *Verifier) CheckEvent(id uint64, subject, eventType string) error {
	v.expected[spaceExact]++
	v.expected[spaceSubjectType]++
	v.expected[spaceType]++
	v.expected[spaceTree] += uint64(len(ancestors(subject)))
	v.count = id + 1
	return nil
}

// Finish walks every posting of every index.
func (v *Verifier) Finish() error {
	for _, space := range indexSpaces {
		if err := v.checkSpace(space); err != nil {
			return err
		}
	}
	return nil
}

func (v *Verifier) checkSpace(space byte) error {
	it, err := v.db.NewIter(&pebble.IterOptions{LowerBound: []byte{space}, UpperBound: []byte{space + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	var (
		n          uint64
		ids        []uint64
		lastPrefix []byte
		lastID     uint64
	)
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		if len(key) < 10 {
			return corrupt("malformed index key %q", key)
		}
		prefix := key[:len(key)-8]
		if ids, err = decodePosting(ids[:0], idOf(key), it.Value()); err != nil {
			return corrupt("index key %q: %v", key, err)
		}
		samePrefix := bytes.Equal(prefix, lastPrefix)
		for i, id := range ids {
			if id >= v.count {
				return corrupt("index %q lists event %d beyond the log", prefix, id)
			}
			if (i > 0 || samePrefix) && id <= lastID {
				return corrupt("index %q lists event %d twice or out of order", prefix, id)
			}
			lastID = id
			if err := v.checkEntry(space, prefix, id); err != nil {
				return err
			}
			n++
		}
		lastPrefix = append(lastPrefix[:0], prefix...)
	}
	if err := it.Error(); err != nil {
		return err
	}
	if n != v.expected[space] {
		return corrupt("index %q holds %d entries, the events need %d", []byte{space}, n, v.expected[space])
	}
	return nil
}

// checkEntry checks that event id belongs under prefix in space.
func (v *Verifier) checkEntry(space byte, prefix []byte, id uint64) error {
	r, found, err := v.Record(id)
	if err != nil {
		return err
	}
	if !found {
		return corrupt("index %q lists the missing event %d", prefix, id)
	}
	f, err := event.Decode(r)
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
