package pebblestore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/store"
)

// indexSpaces are the key spaces of the indexes, checked by count in Finish.
var indexSpaces = []byte{spaceExact, spaceTree, spaceSubjectType, spaceType}

// Verifier checks that every event has its index entries and that no index
// holds more entries than the events need. Get one with NewVerifier.
type Verifier struct {
	*Backend
	expected map[byte]uint64
	key      []byte
}

var _ store.IndexVerifier = (*Verifier)(nil)

// NewVerifier returns a Verifier over b, to pass to store.Verify.
func NewVerifier(b *Backend) *Verifier {
	return &Verifier{Backend: b, expected: map[byte]uint64{}}
}

// CheckEvent checks the index entries of one event.
func (v *Verifier) CheckEvent(id uint64, subject, eventType string) error {
	keys := [][]byte{
		appendID(exactPrefix(nil, subject), id),
		appendID(subjectTypePrefix(nil, subject, eventType), id),
		appendID(typePrefix(nil, eventType), id),
	}
	for _, a := range ancestors(subject) {
		keys = append(keys, appendID(treePrefix(nil, a), id))
	}
	for _, k := range keys {
		_, closer, err := v.db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return &store.CorruptionError{Detail: fmt.Sprintf("event %d (%s, %s) lacks its index entry %q", id, subject, eventType, k)}
		}
		if err != nil {
			return fmt.Errorf("read index of event %d: %w", id, err)
		}
		closer.Close()
		v.expected[k[0]]++
	}
	return nil
}

// Finish checks that no index holds entries beyond those of the events.
func (v *Verifier) Finish() error {
	for _, space := range indexSpaces {
		it, err := v.db.NewIter(&pebble.IterOptions{LowerBound: []byte{space}, UpperBound: []byte{space + 1}})
		if err != nil {
			return err
		}
		var n uint64
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			return err
		}
		if n != v.expected[space] {
			return &store.CorruptionError{Detail: fmt.Sprintf("index %q holds %d entries, the events need %d", space, n, v.expected[space])}
		}
	}
	return nil
}
