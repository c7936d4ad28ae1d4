package pgstore

import "github.com/eventstore-service/eventstore/modules/store"

// Subjects iterates the subjects with events, base and below, in tree
// order: eventstore.subjects keeps each subject with its tree key
// (store.TreeKey), whose byte order is tree order, and base's descendants
// are the keys that start with base's key and 0x01.
func (b *Backend) Subjects(base string) store.StringIterator {
	if !storable(base) {
		return &stringPages{done: true, pos: -1}
	}
	if base == "/" {
		return newStringPages(b.live, b.q, "SELECT tree_key, subject FROM eventstore.subjects WHERE tree_key > $1 ORDER BY tree_key LIMIT $2")
	}
	key := store.TreeKey(base)
	return newStringPages(b.live, b.q, `SELECT tree_key, subject FROM eventstore.subjects
WHERE tree_key > $1 AND (tree_key = $3 OR (tree_key > $4 AND tree_key < $5)) ORDER BY tree_key LIMIT $2`,
		key, key+"\x01", key+"\x02")
}

// EventTypes iterates the types of written events in byte order, from
// eventstore.event_types, which every commit keeps up to date.
func (b *Backend) EventTypes() store.StringIterator {
	return newStringPages(b.live, b.q, "SELECT type, type FROM eventstore.event_types WHERE type > $1 ORDER BY type LIMIT $2")
}
