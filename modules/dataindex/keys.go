package dataindex

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Key is one key of a data index: a value with its EventQL kind, so that
// "42" and 42 are different keys (String, Int, Bool); or the kind of the
// value at the path alone (the Kind keys), which a lookup reads to find
// the events on which a comparison fails instead of being false
// (Equal, Contains).
type Key string

// The kind keys: every event whose value at the path is not null has the
// one of its value's kind.
const (
	StringKind Key = "ks"
	NumberKind Key = "kn"
	BoolKind   Key = "kb"
	ArrayKind  Key = "ka"
	ObjectKind Key = "ko"
)

// Keyed are the keys that one data index gave an event when the event was
// committed.
type Keyed struct {
	Index uint64
	Keys  []Key
}

// KeysOf returns the keys that index gave the event keyed describes, and
// whether it keyed the event at its commit (if not, they are unknown).
func KeysOf(keyed []Keyed, index uint64) ([]Key, bool) {
	for _, k := range keyed {
		if k.Index == index {
			return k.Keys, true
		}
	}
	return nil, false
}

// IsKind reports whether k is one of the kind keys.
func (k Key) IsKind() bool { return len(k) == 2 && k[0] == 'k' }

// MaxExactInt bounds the numbers that give keys by value beyond INTs: a
// FLOAT64 is equal to an INT of at most 2^53 either way only if it is
// integral and the same number, so an integral FLOAT64 within it is keyed
// as that INT; a planner looks an INT literal up only within it.
const MaxExactInt = 1 << 53

// String returns the key of a STRING.
func String(s string) Key { return Key("s" + s) }

// Int returns the key of an INT.
func Int(n int64) Key { return Key("i" + strconv.FormatInt(n, 10)) }

// Bool returns the key of a BOOLEAN.
func Bool(b bool) Key {
	if b {
		return "b1"
	}
	return "b0"
}

// kindOf returns the kind key of the value a key of String, Int or Bool
// was made of.
func (k Key) kindOf() Key {
	switch k[0] {
	case 's':
		return StringKind
	case 'i':
		return NumberKind
	}
	return BoolKind
}

// Lookup is a key read within the event ids From..To, both inclusive.
type Lookup struct {
	Key      Key
	From, To uint64
}

// Reads reports whether lookups of index read the event id by the keys
// the index gave it at its commit (keyed): one of the lookups' keys within
// its own ids; known is false when the index did not key the event then.
func Reads(lookups []Lookup, index uint64, keyed []Keyed, id uint64) (match, known bool) {
	keys, known := KeysOf(keyed, index)
	if !known {
		return false, false
	}
	for _, l := range lookups {
		if id >= l.From && id <= l.To && slices.Contains(keys, l.Key) {
			return true, true
		}
	}
	return false, true
}

// Equal returns the keys a lookup for x.data.<path> == lit reads: the
// events whose value is lit (a key of String, Int or Bool), and those
// whose value is of another kind than lit's and not null, on which the
// comparison fails (eventql.md §16.2; EqualFailures): with these, the
// lookup loads every event on which the conjunct is not false.
func Equal(lit Key) []Key { return append([]Key{lit}, EqualFailures(lit)...) }

// EqualFailures returns the kind keys of the values on which a comparison
// with lit fails: not null and of another kind.
func EqualFailures(lit Key) []Key {
	var keys []Key
	for _, kind := range []Key{StringKind, NumberKind, BoolKind, ArrayKind, ObjectKind} {
		if kind != lit.kindOf() {
			keys = append(keys, kind)
		}
	}
	return keys
}

// Contains returns the keys a lookup for x.data.<path> CONTAINS lit reads:
// the events whose array holds lit, and those whose value is not an array
// and not null, on which CONTAINS fails (ContainsFailures).
func Contains(lit Key) []Key { return append([]Key{lit}, ContainsFailures()...) }

// ContainsFailures returns the kind keys of the values on which CONTAINS
// fails: not null and not an array.
func ContainsFailures() []Key { return []Key{StringKind, NumberKind, BoolKind, ObjectKind} }

// Keys appends to dst the keys that data, an event's canonical JSON data,
// gives an index on the path of tokens (Tokens): for the value there, its
// kind key, and
//   - for a string, an integer or a boolean, its key;
//   - for an array, the key of each element that is one of those;
//   - for a FLOAT64 integral and within MaxExactInt, the key of that INT;
//   - nothing more for an object, another number, or null.
//
// No value at the path (or data that is no JSON) gives no key. Numbers are
// read as EventQL reads them: without '.', 'e' or 'E' and within INT, an
// INT; otherwise a FLOAT64. Keys are not repeated.
func Keys(dst []Key, data []byte, tokens []string) []Key {
	raw, ok := at(data, tokens)
	if !ok {
		return dst
	}
	start := len(dst)
	switch raw[0] {
	case 'n':
		return dst
	case '{':
		return append(dst, ObjectKind)
	case '[':
		dst = append(dst, ArrayKind)
		sc := jsonscan.New(raw)
		_ = sc.Array(func() error {
			el, err := sc.Raw()
			if err == nil && len(el) > 0 {
				if k, ok := scalar(el); ok && !slices.Contains(dst[start:], k) {
					dst = append(dst, k)
				}
			}
			return err
		})
		return dst
	}
	if k, ok := scalar(raw); ok {
		dst = append(dst, k)
	}
	switch raw[0] {
	case '"':
		return append(dst, StringKind)
	case 't', 'f':
		return append(dst, BoolKind)
	}
	return append(dst, NumberKind)
}

// scalar returns the key of a string, boolean or number as written in raw,
// if it has one.
func scalar(raw []byte) (Key, bool) {
	switch raw[0] {
	case '"':
		s, _, err := jsonscan.New(raw).String()
		return String(s), err == nil
	case 't':
		return Bool(true), true
	case 'f':
		return Bool(false), true
	case '{', '[', 'n':
		return "", false
	}
	if !bytes.ContainsAny(raw, ".eE") {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return Int(n), true
		}
	}
	f, _ := strconv.ParseFloat(string(raw), 64)
	if math.Abs(f) <= MaxExactInt && f == math.Trunc(f) {
		return Int(int64(f)), true
	}
	return "", false
}

// at returns the value of data at the path of tokens, as written. Each
// token names an object's member, as EventQL reads x.data.<a>.<b>: a path
// that crosses anything but objects reaches no value (EventQL reads null).
func at(data []byte, tokens []string) ([]byte, bool) {
	raw := data
	for _, token := range tokens {
		sc := jsonscan.New(raw)
		if sc.Peek() != jsonscan.KindObject {
			return nil, false
		}
		var found []byte
		err := sc.ObjectBytes(func(key []byte) error {
			if string(key) != token {
				return sc.Skip()
			}
			var err error
			found, err = sc.Raw() // the last of duplicate members, as EventQL reads them
			return err
		})
		if err != nil || found == nil {
			return nil, false
		}
		raw = found
	}
	sc := jsonscan.New(raw)
	if k := sc.Peek(); k == jsonscan.KindEnd || k == jsonscan.KindOther {
		return nil, false
	}
	value, err := sc.Raw()
	return value, err == nil
}
