package store

import (
	"math"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultLatestCacheSize is how many subjects the writer remembers the
// latest event of, unless Memory says otherwise.
const DefaultLatestCacheSize = 100_000

// noEvent marks a subject known to have no event.
const noEvent = math.MaxUint64

// latestCache remembers the latest event id of the subjects recently
// written or checked, and which subjects have none, so that the writer
// decides subject preconditions without going to storage. Only the writer
// goroutine uses it; it holds the committed state, because the writer
// updates it with every commit it publishes (and with every lookup of the
// committed state it makes).
type latestCache struct {
	lru   *simplelru.LRU[string, uint64]
	limit int // of subjects; never changes
}

func newLatestCache(size int) *latestCache {
	size = max(size, 1)
	lru, _ := simplelru.NewLRU[string, uint64](size, nil)
	return &latestCache{lru: lru, limit: size}
}

// get returns the latest id of subject and whether it has one; known is
// false when the cache does not know the subject.
func (c *latestCache) get(subject string) (id uint64, found, known bool) {
	id, known = c.lru.Get(subject)
	return id, known && id != noEvent, known
}

// purge forgets every subject.
func (c *latestCache) purge() { c.lru.Purge() }

// put remembers the latest id of subject, or that it has none.
func (c *latestCache) put(subject string, id uint64, found bool) {
	if !found {
		id = noEvent
	}
	c.lru.Add(subject, id)
}
