package pebblestore

import (
	"encoding/binary"
	"strings"

	"github.com/eventstore-service/eventstore/modules/dataindex"
)

// Key layout. Every key starts with a one-byte space; subjects inside keys
// are encoded with '/' turned into 0x01, so that byte order is depth-first
// order by segments ("/a/c" before "/a-b") and a parent precedes its
// descendants; 0x00 ends a subject or type.
//
//	e <id>                                 event record (its JSON without signature)
//	x <subject> 0x00 <id>                  exact subject index
//	t <ancestor> 0x00 <id>                 tree index: one per proper ancestor other than "/"
//	p <subject> 0x00 <type> 0x00 <id>      subject and type index
//	y <type> 0x00 <id>                     type index
//	d <index> <n> <key> <id>               data index entry: the index's id
//	                                       (8 bytes), the key's length (uvarint)
//	                                       and the key (store.Posting)
//	v <space> 0x00 <key>                   a record of feature state: its version
//	                                       (8 bytes) and its value (state.go)
//	m head                                 the head: count, last hash, last time,
//	                                       state changes (Head.States)
//	m restoring                            present while a restore writes the log
//
// Format version 1 kept the registered schemas under keys of their own,
// which its migration (format.go) moves into the feature state:
//
//	s <type>                               the schema registered for the type
//	o <n>                                  the type of the n-th schema registered (from 0)
//
// Ids are 8-byte big-endian, so they sort numerically.
const (
	spaceEvent       = 'e'
	spaceExact       = 'x'
	spaceTree        = 't'
	spaceSubjectType = 'p'
	spaceType        = 'y'
	spaceMeta        = 'm'
	spaceData        = 'd'
	spaceState       = 'v'
	spaceSchemaV1    = 's'
	spaceOrderV1     = 'o'

	subjectSeparator = 0x01
	terminator       = 0x00
)

var (
	headKey      = []byte{spaceMeta, 'h', 'e', 'a', 'd'}
	restoringKey = []byte{spaceMeta, 'r', 'e', 's', 't', 'o', 'r', 'i', 'n', 'g'}
)

func appendID(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, id)
}

func appendSubject(dst []byte, subject string) []byte {
	for i := 0; i < len(subject); i++ {
		if c := subject[i]; c == '/' {
			dst = append(dst, subjectSeparator)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

func decodeSubject(encoded []byte) string {
	return strings.ReplaceAll(string(encoded), string(rune(subjectSeparator)), "/")
}

func eventKey(dst []byte, id uint64) []byte {
	return appendID(append(dst, spaceEvent), id)
}

// exactPrefix is the prefix of the exact index entries of subject.
func exactPrefix(dst []byte, subject string) []byte {
	return append(appendSubject(append(dst, spaceExact), subject), terminator)
}

// treePrefix is the prefix of the tree index entries below ancestor.
func treePrefix(dst []byte, ancestor string) []byte {
	return append(appendSubject(append(dst, spaceTree), ancestor), terminator)
}

func subjectTypePrefix(dst []byte, subject, eventType string) []byte {
	dst = append(appendSubject(append(dst, spaceSubjectType), subject), terminator)
	return append(append(dst, eventType...), terminator)
}

func typePrefix(dst []byte, eventType string) []byte {
	return append(append(append(dst, spaceType), eventType...), terminator)
}

// dataIndexPrefix is the prefix of every entry of the data index id.
func dataIndexPrefix(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, spaceData), id)
}

// dataPrefix is the prefix of the entries of key in the data index id.
func dataPrefix(dst []byte, id uint64, key dataindex.Key) []byte {
	dst = binary.AppendUvarint(dataIndexPrefix(dst, id), uint64(len(key)))
	return append(dst, key...)
}

// idRange returns the bounds of the index entries of prefix with ids from
// from to to, both inclusive.
func idRange(prefix []byte, from, to uint64) (lower, upper []byte) {
	lower = appendID(append([]byte(nil), prefix...), from)
	if to == ^uint64(0) {
		return lower, prefixEnd(prefix)
	}
	return lower, appendID(append([]byte(nil), prefix...), to+1)
}

// prefixEnd returns the smallest key greater than every key with prefix.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// idOf returns the id at the end of an index key.
func idOf(key []byte) uint64 {
	return binary.BigEndian.Uint64(key[len(key)-8:])
}

// ancestors returns the proper ancestors of subject other than "/".
func ancestors(subject string) []string {
	var out []string
	for i := 1; i < len(subject); i++ {
		if subject[i] == '/' {
			out = append(out, subject[:i])
		}
	}
	return out
}
