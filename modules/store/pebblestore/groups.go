package pebblestore

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/eventstore-service/eventstore/modules/store"
)

// groupIDs is the most ids one call of a GroupFunc takes: a group of
// millions of events comes in pieces.
const groupIDs = 4096

// Groups walks the subject and type index of s's subject (and, when
// recursive, of its descendants, which follow it in key order): one
// posting after the other within a subject and type, seeking only to the
// posting that holds s.From and past the postings beyond s.To. It reads
// no record.
func (b *Backend) Groups(s store.Scan, fn store.GroupFunc) error {
	lower, upper := []byte{spaceSubjectType}, []byte{spaceSubjectType + 1}
	switch {
	case s.Type != "" || s.SubjectPrefix != "" || len(s.IDs) > 0 || s.Descending:
		return fmt.Errorf("groups select by subject and ids alone")
	case s.From > s.To:
		return nil
	case s.Subject == "" || (s.Subject == "/" && s.Recursive):
	case !s.Recursive:
		lower = append(appendSubject([]byte{spaceSubjectType}, s.Subject), terminator)
		upper = prefixEnd(lower)
	default:
		// The subject's own entries (<subject> 0x00 …), then its
		// descendants' (<subject> 0x01 …).
		lower = append(appendSubject([]byte{spaceSubjectType}, s.Subject), terminator)
		upper = append(lower[:len(lower)-1:len(lower)-1], subjectSeparator+1)
	}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	w := groupWalk{it: it, from: s.From, to: s.To, fn: fn}
	return errors.Join(w.run(), closeIterator(&w.it))
}

// groupWalk is one walk of Groups.
type groupWalk struct {
	it       *pebble.Iterator
	from, to uint64
	fn       store.GroupFunc
	group    []byte // <subject> 0x00 <type> 0x00 of the group walked
	seek     []byte
	posting  []uint64
	ids      []uint64
}

func (w *groupWalk) run() error {
	for ok := w.it.First(); ok; {
		key := w.it.Key()
		if len(key) < 11 || key[len(key)-9] != terminator {
			return &store.CorruptionError{Detail: fmt.Sprintf("malformed index key %q", key)}
		}
		w.group = append(w.group[:0], key[:len(key)-8]...)
		var err error
		if ok, err = w.walkGroup(); err != nil {
			return err
		}
	}
	return w.it.Error()
}

// walkGroup calls fn with the ids from..to of w.group, whose first entry
// the iterator is on, and leaves it on the next group's first entry;
// false when there is none.
func (w *groupWalk) walkGroup() (bool, error) {
	subject, eventType, err := w.names()
	if err != nil {
		return false, err
	}
	ok := true
	if w.from > 0 {
		// The last posting starting at or below from may hold from.
		w.seek = appendID(append(w.seek[:0], w.group...), w.from+1)
		if !w.it.SeekLT(w.seek) || !w.inGroup() {
			ok = w.it.SeekGE(w.group)
		}
	}
	w.ids = w.ids[:0]
	for ; ok && w.inGroup(); ok = w.it.Next() {
		first := idOf(w.it.Key())
		if first > w.to {
			// Past to: on to the next group.
			w.seek = prefixEnd(w.group)
			ok = w.it.SeekGE(w.seek)
			break
		}
		if w.posting, err = decodePosting(w.posting[:0], first, w.it.Value()); err != nil {
			return false, err
		}
		for _, id := range w.posting {
			if id < w.from || id > w.to {
				continue
			}
			if w.ids = append(w.ids, id); len(w.ids) == groupIDs {
				if err := w.fn(subject, eventType, w.ids); err != nil {
					return false, err
				}
				w.ids = w.ids[:0]
			}
		}
	}
	if len(w.ids) > 0 {
		if err := w.fn(subject, eventType, w.ids); err != nil {
			return false, err
		}
	}
	return ok, nil
}

// inGroup reports whether the iterator's entry is one of w.group's.
func (w *groupWalk) inGroup() bool {
	key := w.it.Key()
	return len(key) == len(w.group)+8 && bytes.HasPrefix(key, w.group)
}

// names decodes the subject and type of w.group.
func (w *groupWalk) names() (subject, eventType string, err error) {
	body := w.group[1 : len(w.group)-1]
	end := bytes.IndexByte(body, terminator)
	if end < 0 {
		return "", "", &store.CorruptionError{Detail: fmt.Sprintf("malformed index key %q", w.group)}
	}
	return decodeSubject(body[:end]), string(body[end+1:]), nil
}
