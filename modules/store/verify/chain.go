package verify

import (
	"bytes"

	"github.com/eventstore-service/eventstore/modules/store"
)

// chainCheck checks what joins the events, in id order: contiguous ids,
// links, times; it reports each event's own problems in the same order, so
// the first problem it reports is that of the lowest id; and it hands every
// intact event to the index check.
type chainCheck struct {
	n        uint64 // events checked
	prevHash []byte // of event n-1
	prevTime []byte
	indexes  store.IndexVerifier
	progress func(checked uint64)
}

// check checks the events of c, which follow those checked so far.
func (ch *chainCheck) check(c *chunk) error {
	for i, id := range c.ids {
		n := ch.n
		if id != n {
			return corruption("event %d is missing (next stored id is %d)", n, id)
		}
		res := &c.results[i]
		if res.problem != nil {
			return corruption("event %d: %v", n, res.problem)
		}
		if predecessor := c.value(res.predecessorHash); !bytes.Equal(predecessor, ch.prevHash) {
			return corruption("event %d links to %s, not to the hash %s of event %d", n, predecessor, ch.prevHash, int64(n)-1)
		}
		t := c.value(res.time)
		if bytes.Compare(t, ch.prevTime) <= 0 { // same fixed-width format: byte order is time order
			return corruption("event %d has time %s, not after %s", n, t, ch.prevTime)
		}
		if res.invalid != nil {
			return corruption("event %d does not match the schema of %s: %v", n, res.eventType, res.invalid)
		}
		if ch.indexes != nil {
			if err := ch.indexes.CheckEvent(n, res.subject, res.eventType); err != nil {
				return err
			}
		}
		ch.prevHash = append(ch.prevHash[:0], c.value(res.hash)...)
		ch.prevTime = append(ch.prevTime[:0], t...)
		ch.n++
	}
	if ch.progress != nil {
		ch.progress(ch.n)
	}
	return nil
}
