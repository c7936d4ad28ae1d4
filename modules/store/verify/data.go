package verify

import (
	"hash/maphash"
	"sync"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/store"
)

// dataCheck checks the data indexes stored when a verification began: the
// workers sum the keys each event needs (dataSums), and finish walks every
// posting of each index and sums those of the verified events it keys.
// Sums of the same postings are equal in any order; of different ones
// they differ except with a probability of about 2⁻⁶⁴, the seed being
// random. An index removed or registered anew during the verification is
// left alone.
type dataCheck struct {
	indexes []*store.DataIndex
	seed    maphash.Seed
	mu      sync.Mutex
	sums    []dataSum // by index
}

// dataSum sums postings: their number and the sum of a keyed hash of each.
type dataSum struct{ n, sum uint64 }

func (d *dataSum) add(seed maphash.Seed, key dataindex.Key, id uint64) {
	d.n++
	d.sum += maphash.Comparable(seed, struct {
		key dataindex.Key
		id  uint64
	}{key, id})
}

// newDataCheck returns the check of the data indexes stored in b, nil when
// b keeps none.
func newDataCheck(b store.Backend) (*dataCheck, error) {
	if _, ok := b.(store.DataPostingsReader); !ok {
		return nil, nil
	}
	indexes, err := store.ReadDataIndexes(b)
	if err != nil || len(indexes) == 0 {
		return nil, err
	}
	return &dataCheck{indexes: indexes, seed: maphash.MakeSeed(), sums: make([]dataSum, len(indexes))}, nil
}

// dataSums is one worker's sums of the keys of its events.
type dataSums struct {
	sums []dataSum
	keys []dataindex.Key
}

// add sums the keys that the event id of eventType with data needs.
func (d *dataCheck) add(w *dataSums, id uint64, eventType string, data []byte) {
	if w.sums == nil {
		w.sums = make([]dataSum, len(d.indexes))
	}
	for i, x := range d.indexes {
		if !x.Keyed(id) {
			continue
		}
		w.keys = x.Keys(w.keys[:0], eventType, data)
		for _, k := range w.keys {
			w.sums[i].add(d.seed, k, id)
		}
	}
}

// merge adds a worker's sums and empties them.
func (d *dataCheck) merge(w *dataSums) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range w.sums {
		d.sums[i].n += w.sums[i].n
		d.sums[i].sum += w.sums[i].sum
		w.sums[i] = dataSum{}
	}
}

// finish compares the postings of each index of the events below count
// with the sums of the events.
func (d *dataCheck) finish(b store.Backend, count uint64) error {
	reader := b.(store.DataPostingsReader)
	for i, x := range d.indexes {
		var found dataSum
		err := reader.DataPostings(x.ID, func(key dataindex.Key, id uint64) error {
			if id < count && x.Keyed(id) {
				found.add(d.seed, key, id)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if found == d.sums[i] {
			continue
		}
		if stands, err := d.stands(b, x); err != nil || !stands {
			return err // removed meanwhile
		}
		if found.n != d.sums[i].n {
			return corruption("data index %s holds %d keys of the events, they need %d", x.Name, found.n, d.sums[i].n)
		}
		return corruption("data index %s holds other keys than the events need", x.Name)
	}
	return nil
}

// stands reports whether x is stored still as it was.
func (d *dataCheck) stands(b store.Backend, x *store.DataIndex) (bool, error) {
	now, err := store.ReadDataIndexes(b)
	if err != nil {
		return false, err
	}
	for _, y := range now {
		if y.ID == x.ID {
			return true, nil
		}
	}
	return false, nil
}
