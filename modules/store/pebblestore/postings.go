package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/dataindex"
)

// Index entries are postings: one key per index prefix and group commit,
// <prefix> <first id>, whose value lists the other ids of the group under
// that prefix as uvarint deltas (empty when the group had one). The ids of
// one group commit are contiguous and precede those of the next, so
// postings sorted by first id hold all ids of a prefix in ascending order,
// and a posting's ids all lie below the next posting's first id.

// postingValue encodes ids[1:] as deltas; ids ascend and ids[0] is in the key.
func postingValue(dst []byte, ids []uint64) []byte {
	for i := 1; i < len(ids); i++ {
		dst = binary.AppendUvarint(dst, ids[i]-ids[i-1])
	}
	return dst
}

// decodePosting appends the ids of the posting with first id and value to dst.
func decodePosting(dst []uint64, first uint64, value []byte) ([]uint64, error) {
	dst = append(dst, first)
	id := first
	for len(value) > 0 {
		delta, n := binary.Uvarint(value)
		if n <= 0 || delta == 0 {
			return dst, fmt.Errorf("malformed posting of id %d", first)
		}
		id += delta
		dst = append(dst, id)
		value = value[n:]
	}
	return dst, nil
}

// postings collects the postings of one commit, keyed by index prefix, in
// the order the prefixes first appear. The writer reuses one for every
// commit (reset), so that its map and id slices are allocated once.
type postings struct {
	index map[string]int
	keys  []string
	ids   [][]uint64
}

// keptPrefixes is the most prefixes a reset postings keeps room for: one
// large batch does not leave a large map behind.
const keptPrefixes = 4096

func newPostings() *postings {
	return &postings{index: map[string]int{}}
}

// reset empties p for the next commit.
func (p *postings) reset() {
	if len(p.keys) > keptPrefixes {
		*p = *newPostings()
		return
	}
	clear(p.index)
	p.keys = p.keys[:0]
	p.ids = p.ids[:0]
}

// add records id under prefix; ids must be added in ascending order.
func (p *postings) add(prefix []byte, id uint64) {
	if i, ok := p.index[string(prefix)]; ok {
		p.ids[i] = append(p.ids[i], id)
		return
	}
	key := string(prefix)
	p.index[key] = len(p.keys)
	p.keys = append(p.keys, key)
	if n := len(p.ids); n < cap(p.ids) { // reuse the ids slice a former commit left there
		p.ids = p.ids[:n+1]
		p.ids[n] = append(p.ids[n][:0], id)
	} else {
		p.ids = append(p.ids, []uint64{id})
	}
}

// flush sets a posting per prefix of p into batch, and resets p; k is
// scratch, returned for reuse.
func (p *postings) flush(batch *pebble.Batch, k []byte) ([]byte, error) {
	var value []byte
	for i, prefix := range p.keys {
		ids := p.ids[i]
		k = appendID(append(k[:0], prefix...), ids[0])
		value = postingValue(value[:0], ids)
		if err := batch.Set(k, value, nil); err != nil {
			return k, err
		}
	}
	p.reset()
	return k, nil
}

// DataPostings calls fn for every posting of the data index id, in key
// order.
func (b *Backend) DataPostings(id uint64, fn func(key dataindex.Key, eventID uint64) error) error {
	prefix := dataIndexPrefix(nil, id)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	var ids []uint64
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		k := it.Key()[len(prefix):]
		n, used := binary.Uvarint(k)
		if used <= 0 || uint64(len(k)-used) != n+8 {
			err = fmt.Errorf("malformed key %x of data index %d", it.Key(), id)
			break
		}
		key := dataindex.Key(k[used : used+int(n)])
		if ids, err = decodePosting(ids[:0], idOf(k), it.Value()); err != nil {
			break
		}
		for _, eventID := range ids {
			if err = fn(key, eventID); err != nil {
				break
			}
		}
	}
	return errors.Join(err, it.Close())
}
