package pgstore

import (
	"slices"

	"github.com/eventstore-service/eventstore/modules/store"
)

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

// SubjectSeeker finds the subjects with events, base and below, in
// eventstore.subjects by their tree keys. It keeps the page of rows its
// last statement read and answers a seek within that page without a
// statement: pages grow while the seeks move forward through them (a scan
// of subjects), and stay short after a jump (a skipped subtree).
func (b *Backend) SubjectSeeker(base string) store.SubjectSeeker {
	s := &subjectSeeker{live: b.live, q: b.q, high: "\x02", limit: firstSeekRows}
	if base != "/" {
		s.low = store.TreeKey(base)
		s.high = s.low + "\x02"
	}
	if !storable(base) {
		s.low, s.high = "", "" // nothing lies within
	}
	return s
}

// Page sizes of a subjectSeeker.
const (
	firstSeekRows = 4
	maxSeekRows   = 1024
)

// subjectSeeker is the store.SubjectSeeker of the PostgreSQL backend: the
// base's subjects are those whose tree keys lie in [low, high).
type subjectSeeker struct {
	live      *liveness
	q         querier
	low, high string
	limit     int

	from     string   // the page holds the first rows with tree_key >= from
	keys     []string // of the page, ascending
	subjects []string
	full     bool // the page was cut at its limit: more rows may follow
	read     bool // a page was read
}

func (s *subjectSeeker) Seek(key string) (string, bool, error) {
	if !storable(key) || s.high == "" {
		return "", false, nil
	}
	key = max(key, s.low)
	if key >= s.high {
		return "", false, nil
	}
	if s.read && key >= s.from {
		i, _ := slices.BinarySearch(s.keys, key)
		if i < len(s.keys) {
			return s.subjects[i], true, nil
		}
		if !s.full {
			return "", false, nil
		}
	}
	if s.read && len(s.keys) > 0 && key == s.keys[len(s.keys)-1]+"\x01" {
		s.limit = min(2*s.limit, maxSeekRows) // right past the page's last subject: a scan
	} else {
		s.limit = firstSeekRows // a jump
	}
	if err := s.fetch(key); err != nil {
		return "", false, err
	}
	if len(s.keys) == 0 {
		return "", false, nil
	}
	return s.subjects[0], true, nil
}

// fetch reads the page of the first rows from key on.
func (s *subjectSeeker) fetch(key string) error {
	s.keys, s.subjects, s.from, s.read = s.keys[:0], s.subjects[:0], key, false
	ctx, cancel := s.live.timeout()
	defer cancel()
	rows, err := s.q.Query(ctx, `SELECT tree_key, subject FROM eventstore.subjects
WHERE tree_key >= $1 AND tree_key < $2 ORDER BY tree_key LIMIT $3`, key, s.high, s.limit)
	if err != nil {
		return wrap(err, "seek subjects")
	}
	var treeKey, subject string
	for rows.Next() {
		if err := rows.Scan(&treeKey, &subject); err != nil {
			rows.Close()
			return wrap(err, "seek subjects")
		}
		s.keys = append(s.keys, treeKey)
		s.subjects = append(s.subjects, subject)
	}
	if err := rows.Err(); err != nil {
		return wrap(err, "seek subjects")
	}
	s.full, s.read = len(s.keys) == s.limit, true
	return nil
}

func (s *subjectSeeker) Close() error {
	s.keys, s.subjects, s.read = nil, nil, false
	return nil
}
