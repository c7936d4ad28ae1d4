package schema

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// fastNode accepts data for a schema that uses only a common subset of
// JSON Schema, walking the canonical bytes directly instead of decoding
// them for the library. It only ever accepts: data it does not accept goes
// to the library, which decides and explains. A schema using any keyword
// outside the subset has no fast path at all.
type fastNode struct {
	never      bool // the false schema
	types      uint8
	props      map[string]*fastNode
	required   []string
	closed     bool      // additionalProperties: false
	additional *fastNode // additionalProperties as a schema
	items      *fastNode
	enum       [][]byte // canonical JSON of the allowed values (const is an enum of one)

	minimum, maximum, exclusiveMinimum, exclusiveMaximum *bound
	minLength, maxLength, minItems, maxItems             int // -1 when absent
	pattern                                              *regexp.Regexp
}

// bound is a numeric limit, exact, and as an int64 when it is an integer
// that fits, so that the usual integer data is compared without big.Rat.
type bound struct {
	rat     *big.Rat
	integer int64
	isInt64 bool
}

// cmp compares a number (its literal, and as an int64 when isInt64) with
// the bound, exactly.
func (b *bound) cmp(literal []byte, integer int64, isInt64 bool, rat func() *big.Rat) int {
	if isInt64 && b.isInt64 {
		switch {
		case integer < b.integer:
			return -1
		case integer > b.integer:
			return 1
		}
		return 0
	}
	return rat().Cmp(b.rat)
}

// JSON types as bits of fastNode.types; 0 allows every type.
const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString,
}

// annotations have no effect on validation.
var annotations = map[string]bool{
	"title": true, "description": true, "$comment": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
}

// compileFast returns the fast node of a schema document, or false when
// the schema uses anything outside the subset.
func compileFast(v any, root bool) (*fastNode, bool) {
	switch v := v.(type) {
	case bool:
		return &fastNode{never: !v, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}, true
	case map[string]any:
		n := &fastNode{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
		for key, value := range v {
			if !n.keyword(key, value, root) {
				return nil, false
			}
		}
		return n, true
	}
	return nil, false
}

func (n *fastNode) keyword(key string, value any, root bool) bool {
	var ok bool
	switch key {
	case "$schema":
		return root
	case "type":
		return n.typeKeyword(value)
	case "properties":
		props, isMap := value.(map[string]any)
		if !isMap {
			return false
		}
		n.props = make(map[string]*fastNode, len(props))
		for name, sub := range props {
			if n.props[name], ok = compileFast(sub, false); !ok {
				return false
			}
		}
		return true
	case "required":
		list, isList := value.([]any)
		for _, item := range list {
			name, isString := item.(string)
			if !isString {
				return false
			}
			n.required = append(n.required, name)
		}
		return isList
	case "additionalProperties":
		if b, isBool := value.(bool); isBool && !b {
			n.closed = true
			return true
		}
		n.additional, ok = compileFast(value, false)
		return ok
	case "items":
		n.items, ok = compileFast(value, false)
		return ok
	case "enum":
		list, isList := value.([]any)
		if !isList {
			return false
		}
		for _, item := range list {
			if !n.addEnum(item) {
				return false
			}
		}
		return true
	case "const":
		return n.addEnum(value)
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		num, isNumber := value.(json.Number)
		r, valid := new(big.Rat).SetString(string(num))
		if !isNumber || !valid {
			return false
		}
		b := &bound{rat: r}
		if r.IsInt() && r.Num().IsInt64() {
			b.integer, b.isInt64 = r.Num().Int64(), true
		}
		*map[string]**bound{"minimum": &n.minimum, "maximum": &n.maximum, "exclusiveMinimum": &n.exclusiveMinimum, "exclusiveMaximum": &n.exclusiveMaximum}[key] = b
		return true
	case "minLength", "maxLength", "minItems", "maxItems":
		num, isNumber := value.(json.Number)
		i, err := strconv.Atoi(string(num))
		if !isNumber || err != nil || i < 0 {
			return false
		}
		*map[string]*int{"minLength": &n.minLength, "maxLength": &n.maxLength, "minItems": &n.minItems, "maxItems": &n.maxItems}[key] = i
		return true
	case "pattern":
		p, isString := value.(string)
		re, err := regexp.Compile(p)
		n.pattern = re
		return isString && err == nil
	}
	return annotations[key]
}

func (n *fastNode) typeKeyword(value any) bool {
	names := []any{value}
	if list, isList := value.([]any); isList {
		names = list
	}
	for _, name := range names {
		s, _ := name.(string)
		bit, known := typeBits[s]
		if !known {
			return false
		}
		n.types |= bit
	}
	return len(names) > 0
}

// addEnum records an allowed value. Values with numbers that are not
// integers stay with the library: their canonical form rounds to float64,
// the library compares them exactly.
func (n *fastNode) addEnum(value any) bool {
	raw, err := json.Marshal(value)
	if err != nil || hasFraction(value) {
		return false
	}
	canonical, err := jsonscan.CanonicalValue(raw)
	if err != nil {
		return false
	}
	n.enum = append(n.enum, canonical)
	return true
}

func hasFraction(value any) bool {
	switch v := value.(type) {
	case json.Number:
		return strings.ContainsAny(string(v), ".eE")
	case []any:
		for _, item := range v {
			if hasFraction(item) {
				return true
			}
		}
	case map[string]any:
		for _, item := range v {
			if hasFraction(item) {
				return true
			}
		}
	}
	return false
}

// accepts reports whether the canonical data is valid; false means "ask
// the library", not "invalid". sc is scratch to reuse.
func (n *fastNode) accepts(sc *jsonscan.Scanner, data []byte) bool {
	sc.Reset(data)
	ok, err := n.check(sc)
	return err == nil && ok && sc.End() == nil
}

func (n *fastNode) check(sc *jsonscan.Scanner) (bool, error) {
	if n.never {
		return false, nil
	}
	if n.enum != nil {
		raw, err := sc.Raw()
		if err != nil {
			return false, err
		}
		found := false
		for _, allowed := range n.enum {
			if bytes.Equal(raw, allowed) {
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
		sc = jsonscan.New(raw) // the other keywords look at the same value
	}
	switch sc.Peek() {
	case jsonscan.KindObject:
		return n.checkObject(sc)
	case jsonscan.KindArray:
		return n.checkArray(sc)
	case jsonscan.KindString:
		return n.checkString(sc)
	case jsonscan.KindNumber:
		return n.checkNumber(sc)
	case jsonscan.KindTrue, jsonscan.KindFalse:
		_, err := sc.Bool()
		return n.allows(typeBoolean), err
	case jsonscan.KindNull:
		_, err := sc.Null()
		return n.allows(typeNull), err
	}
	return false, nil
}

// unsafeString views b as a string for parsing, without copying.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (n *fastNode) allows(t uint8) bool { return n.types == 0 || n.types&t != 0 }

func (n *fastNode) checkObject(sc *jsonscan.Scanner) (bool, error) {
	if !n.allows(typeObject) {
		return false, nil
	}
	ok, found := true, 0
	err := sc.ObjectBytes(func(key []byte) error {
		sub := n.props[string(key)]
		switch {
		case !ok:
			return sc.Skip()
		case sub == nil && n.closed:
			ok = false
			return sc.Skip()
		case sub == nil:
			sub = n.additional
		}
		for _, r := range n.required {
			if r == string(key) {
				found++
				break
			}
		}
		if sub == nil {
			return sc.Skip()
		}
		valid, err := sub.check(sc)
		ok = ok && valid
		return err
	})
	return ok && found == len(n.required), err
}

func (n *fastNode) checkArray(sc *jsonscan.Scanner) (bool, error) {
	if !n.allows(typeArray) {
		return false, nil
	}
	ok, count := true, 0
	err := sc.Array(func() error {
		count++
		if !ok || n.items == nil {
			return sc.Skip()
		}
		valid, err := n.items.check(sc)
		ok = ok && valid
		return err
	})
	return ok && (n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems), err
}

func (n *fastNode) checkString(sc *jsonscan.Scanner) (bool, error) {
	s, err := sc.StringBytes()
	if err != nil || !n.allows(typeString) {
		return false, err
	}
	if n.minLength >= 0 || n.maxLength >= 0 {
		length := utf8.RuneCount(s)
		if (n.minLength >= 0 && length < n.minLength) || (n.maxLength >= 0 && length > n.maxLength) {
			return false, nil
		}
	}
	return n.pattern == nil || n.pattern.Match(s), nil
}

func (n *fastNode) checkNumber(sc *jsonscan.Scanner) (bool, error) {
	literal, err := sc.Raw()
	if err != nil {
		return false, err
	}
	var value *big.Rat // exact, made only when needed
	rat := func() *big.Rat {
		if value == nil {
			value, _ = new(big.Rat).SetString(string(literal))
		}
		return value
	}
	plain := !bytes.ContainsAny(literal, ".eE") // an integer literal
	i64, err := strconv.ParseInt(unsafeString(literal), 10, 64)
	isInt64 := plain && err == nil
	integer := plain || rat().IsInt()
	if n.types != 0 && n.types&typeNumber == 0 && !(integer && n.types&typeInteger != 0) {
		return false, nil
	}
	switch {
	case n.minimum != nil && n.minimum.cmp(literal, i64, isInt64, rat) < 0,
		n.maximum != nil && n.maximum.cmp(literal, i64, isInt64, rat) > 0,
		n.exclusiveMinimum != nil && n.exclusiveMinimum.cmp(literal, i64, isInt64, rat) <= 0,
		n.exclusiveMaximum != nil && n.exclusiveMaximum.cmp(literal, i64, isInt64, rat) >= 0:
		return false, nil
	}
	return true, nil
}
