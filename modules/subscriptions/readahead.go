package subscriptions

import "github.com/eventstore-service/eventstore/modules/event"

// readAhead holds the records of deliveries that another consumer's poll
// made to a consumer's partitions and that are not sent yet, so that its
// own poll need not read them again by id: a few batches' worth at most
// (limit records, pollBytes). Records never change, so an entry is
// right whatever became of its delivery; prune drops those no longer
// wanted.
type readAhead struct {
	entries map[uint64]aheadEntry
	size    int
}

type aheadEntry struct {
	partition int
	record    event.Record
}

// room reports whether r takes more records.
func (r *readAhead) room(limit int) bool { return len(r.entries) < limit && r.size < pollBytes }

// put keeps the record of partition's delivery.
func (r *readAhead) put(partition int, rec event.Record) {
	if r.entries == nil {
		r.entries = map[uint64]aheadEntry{}
	}
	r.entries[rec.ID] = aheadEntry{partition, rec}
	r.size += len(rec.JSON)
}

// take returns and forgets the record of id, if held.
func (r *readAhead) take(id uint64) (event.Record, bool) {
	e, ok := r.entries[id]
	if ok {
		delete(r.entries, id)
		r.size -= len(e.record.JSON)
	}
	return e.record, ok
}

// prune forgets the records for which stale reports true.
func (r *readAhead) prune(stale func(partition int, id uint64) bool) {
	for id, e := range r.entries {
		if stale(e.partition, id) {
			delete(r.entries, id)
			r.size -= len(e.record.JSON)
		}
	}
}
