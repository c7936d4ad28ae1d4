package eventql

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Kind is the kind of a runtime value (and, with kindNumber and kindAny,
// of a static type).
type Kind uint8

// Kinds of values, in the order of api messages' type names.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindDateTime
	KindDate
	KindTime
	KindArray
	KindRecord
	kindNumber // static only: INT or FLOAT64
	kindAny    // static only: unknown
)

var kindNames = [...]string{"NULL", "BOOLEAN", "INT", "FLOAT64", "STRING", "DATETIME", "DATE", "TIME", "ARRAY", "RECORD", "NUMBER", "ANY"}

func (k Kind) String() string { return kindNames[k] }

func (k Kind) isNumber() bool { return k == KindInt || k == KindFloat || k == kindNumber }

// Value is a runtime value. Arrays and records read from event data keep
// their canonical JSON (raw) and are decoded only as far as they are used;
// events keep their stored record.
type Value struct {
	kind Kind
	i    int64 // INT; BOOLEAN 0/1; TIME as nanoseconds since midnight
	f    float64
	s    string
	t    time.Time // DATETIME (UTC); DATE (UTC midnight)
	arr  []Value
	rec  *record
	raw  []byte     // canonical JSON of an array or object from event data
	ev   *eventData // an event, kind RECORD
}

type record struct {
	keys []string
	vals []Value
	// fold matches keys ignoring case (event-type records).
	fold bool
}

func (r *record) get(name string) (Value, bool) {
	for i, k := range r.keys {
		if k == name || (r.fold && strings.EqualFold(k, name)) {
			return r.vals[i], true
		}
	}
	return Null, false
}

// Null is the null value.
var Null = Value{kind: KindNull}

// Bool returns a BOOLEAN.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, i: 1}
	}
	return Value{kind: KindBool}
}

// Int returns an INT.
func Int(i int64) Value { return Value{kind: KindInt, i: i} }

// Float returns a FLOAT64.
func Float(f float64) Value { return Value{kind: KindFloat, f: f} }

// String returns a STRING.
func String(s string) Value { return Value{kind: KindString, s: s} }

func dateTime(t time.Time) Value { return Value{kind: KindDateTime, t: t.UTC()} }

func date(t time.Time) Value {
	y, m, d := t.UTC().Date()
	return Value{kind: KindDate, t: time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

func timeOfDay(ns int64) Value { return Value{kind: KindTime, i: ns} }

func array(elems []Value) Value { return Value{kind: KindArray, arr: elems} }

// Record returns a RECORD with keys in the given order.
func Record(keys []string, vals []Value) Value {
	return Value{kind: KindRecord, rec: &record{keys: keys, vals: vals}}
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

func (v Value) isNull() bool { return v.kind == KindNull }

func (v Value) bool() bool { return v.i != 0 }

// IsTrue reports whether v is the BOOLEAN true.
func (v Value) IsTrue() bool { return v.kind == KindBool && v.i != 0 }

// num returns a number as float64.
func (v Value) num() float64 {
	if v.kind == KindInt {
		return float64(v.i)
	}
	return v.f
}

// jsonValue turns a canonical JSON value (from event data) into a Value;
// arrays and objects stay raw until used.
func jsonValue(raw []byte) Value {
	if len(raw) == 0 {
		return Null
	}
	switch raw[0] {
	case '{':
		return Value{kind: KindRecord, raw: raw}
	case '[':
		return Value{kind: KindArray, raw: raw}
	case '"':
		s, _, err := jsonscan.New(raw).String()
		if err != nil {
			return Null
		}
		return String(s)
	case 't':
		return Bool(true)
	case 'f':
		return Bool(false)
	case 'n':
		return Null
	}
	if !bytes.ContainsAny(raw, ".eE") {
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return Int(i)
		}
	}
	f, _ := strconv.ParseFloat(string(raw), 64)
	return Float(f)
}

// elems returns the elements of an ARRAY, decoding raw JSON.
func (v Value) elems() []Value {
	if v.raw == nil {
		return v.arr
	}
	var out []Value
	sc := jsonscan.New(v.raw)
	_ = sc.Array(func() error {
		raw, err := sc.Raw()
		out = append(out, jsonValue(raw))
		return err
	})
	return out
}

// fields returns the keys and values of a RECORD, decoding raw JSON.
func (v Value) fields() *record {
	switch {
	case v.ev != nil:
		return v.ev.record()
	case v.raw == nil:
		return v.rec
	}
	r := &record{}
	sc := jsonscan.New(v.raw)
	_ = sc.Object(func(key string) error {
		raw, err := sc.Raw()
		r.keys = append(r.keys, key)
		r.vals = append(r.vals, jsonValue(raw))
		return err
	})
	return r
}

// field returns x.name: the value under the key on a record, null otherwise.
func (v Value) field(name string) Value {
	switch {
	case v.kind != KindRecord:
		return Null
	case v.ev != nil:
		return v.ev.field(name)
	case v.raw != nil:
		var found Value = Null
		sc := jsonscan.New(v.raw)
		_ = sc.ObjectBytes(func(key []byte) error {
			if string(key) != name {
				return sc.Skip()
			}
			raw, err := sc.Raw()
			found = jsonValue(raw)
			return err
		})
		return found
	}
	val, _ := v.rec.get(name)
	return val
}

// AppendJSON writes the value as JSON (docs/eventql.md §4.1).
func (v Value) AppendJSON(dst []byte) []byte {
	switch v.kind {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		return strconv.AppendBool(dst, v.bool())
	case KindInt:
		return strconv.AppendInt(dst, v.i, 10)
	case KindFloat:
		return jsonscan.AppendFloat(dst, v.f)
	case KindString:
		return jsonscan.AppendString(dst, v.s)
	case KindDateTime, KindDate, KindTime:
		return jsonscan.AppendString(dst, v.text())
	}
	if v.raw != nil {
		return append(dst, v.raw...)
	}
	if v.ev != nil {
		return v.ev.appendJSON(dst)
	}
	if v.kind == KindArray {
		dst = append(dst, '[')
		for i, e := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.AppendJSON(dst)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i, k := range v.rec.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonscan.AppendString(dst, k)
		dst = append(dst, ':')
		dst = v.rec.vals[i].AppendJSON(dst)
	}
	return append(dst, '}')
}

// text is the string form of DATETIME, DATE and TIME values.
func (v Value) text() string {
	switch v.kind {
	case KindDateTime:
		return v.t.Format(time.RFC3339Nano)
	case KindDate:
		return v.t.Format("2006-01-02")
	}
	ns := v.i
	s := time.Date(2000, 1, 1, 0, 0, 0, int(ns), time.UTC).Format("15:04:05.999999999")
	return s
}

// equal is deep equality (docs/eventql.md §7.1 rule 3): numbers by value, records by key
// set; values of different kinds are unequal.
func equal(a, b Value) bool {
	switch {
	case a.kind == KindNull || b.kind == KindNull:
		return a.kind == b.kind
	case a.kind.isNumber() && b.kind.isNumber():
		if a.kind == KindInt && b.kind == KindInt {
			return a.i == b.i
		}
		return a.num() == b.num()
	case a.kind != b.kind:
		return false
	}
	switch a.kind {
	case KindBool, KindTime:
		return a.i == b.i
	case KindString:
		return a.s == b.s
	case KindDateTime, KindDate:
		return a.t.Equal(b.t)
	case KindArray:
		if a.raw != nil && b.raw != nil && bytes.Equal(a.raw, b.raw) {
			return true
		}
		ea, eb := a.elems(), b.elems()
		if len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if !equal(ea[i], eb[i]) {
				return false
			}
		}
		return true
	}
	ra, rb := a.fields(), b.fields()
	if len(ra.keys) != len(rb.keys) {
		return false
	}
	for i, k := range ra.keys {
		other, ok := rb.get(k)
		if !ok || !equal(ra.vals[i], other) {
			return false
		}
	}
	return true
}

// orderable reports whether values of kind can be ordered.
func orderable(k Kind) bool {
	return k.isNumber() || k == KindString || k == KindDateTime || k == KindDate || k == KindTime
}

// sameKind reports whether a and b are of one kind for comparison (numbers
// are one kind).
func sameKind(a, b Kind) bool {
	return a == b || (a.isNumber() && b.isNumber())
}

// compare orders two non-null values of one orderable kind: -1, 0 or 1.
func compare(a, b Value) int {
	switch {
	case a.kind == KindInt && b.kind == KindInt:
		return cmpInt(a.i, b.i)
	case a.kind.isNumber():
		x, y := a.num(), b.num()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case a.kind == KindString:
		return strings.Compare(a.s, b.s)
	case a.kind == KindTime:
		return cmpInt(a.i, b.i)
	}
	return a.t.Compare(b.t)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// appendKey writes a key that is equal for deep-equal values and different
// otherwise, for grouping and DISTINCT.
func (v Value) appendKey(dst []byte) []byte {
	switch v.kind {
	case KindInt:
		return strconv.AppendInt(append(dst, 'n'), v.i, 10)
	case KindFloat:
		if v.f == math.Trunc(v.f) && math.Abs(v.f) < 1<<63 {
			return strconv.AppendInt(append(dst, 'n'), int64(v.f), 10)
		}
		return strconv.AppendFloat(append(dst, 'n'), v.f, 'g', -1, 64)
	case KindNull:
		return append(dst, '0')
	case KindBool:
		return strconv.AppendBool(append(dst, 'b'), v.bool())
	case KindString:
		return jsonscan.AppendString(append(dst, 's'), v.s)
	case KindDateTime, KindDate, KindTime:
		return append(append(dst, byte('d'+v.kind)), v.text()...)
	case KindArray:
		dst = append(dst, '[')
		for _, e := range v.elems() {
			dst = append(e.appendKey(dst), ',')
		}
		return append(dst, ']')
	}
	r := v.fields()
	order := make([]int, len(r.keys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return r.keys[order[x]] < r.keys[order[y]] })
	dst = append(dst, '{')
	for _, i := range order {
		dst = jsonscan.AppendString(dst, r.keys[i])
		dst = append(r.vals[i].appendKey(append(dst, ':')), ',')
	}
	return append(dst, '}')
}
