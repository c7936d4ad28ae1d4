package jsonscan

import (
	"bytes"
	"strings"
)

// Scanner reads one JSON document from a byte slice. Its methods consume
// the next value; after a syntax error the Scanner must not be used further.
type Scanner struct {
	in     []byte
	pos    int
	levels []*level // scratch of Canonical, by nesting depth
	text   []byte   // scratch of decoded strings
	key    []byte   // scratch of decoded object keys
}

// New returns a Scanner over in.
func New(in []byte) *Scanner {
	return &Scanner{in: in}
}

// Reset makes the Scanner read in from the start, keeping its scratch
// buffers, so that a reused Scanner does not allocate them again.
func (c *Scanner) Reset(in []byte) {
	c.in, c.pos = in, 0
}

// Kind is the kind of the next value.
type Kind byte

// Kinds of values, named by their first character.
const (
	KindEnd    Kind = 0
	KindObject Kind = '{'
	KindArray  Kind = '['
	KindString Kind = '"'
	KindNumber Kind = '0'
	KindTrue   Kind = 't'
	KindFalse  Kind = 'f'
	KindNull   Kind = 'n'
	KindOther  Kind = '?'
)

// Peek returns the kind of the next value without consuming it.
func (c *Scanner) Peek() Kind {
	c.space()
	if c.pos >= len(c.in) {
		return KindEnd
	}
	switch ch := c.in[c.pos]; {
	case ch == '{', ch == '[', ch == '"', ch == 't', ch == 'f', ch == 'n':
		return Kind(ch)
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return KindNumber
	}
	return KindOther
}

// Offset returns the position of the next byte to read.
func (c *Scanner) Offset() int { return c.pos }

// End checks that only whitespace follows.
func (c *Scanner) End() error {
	c.space()
	if c.pos != len(c.in) {
		return c.syntaxError("after top-level value")
	}
	return nil
}

// Object reads an object, calling member for each key; member must consume
// the key's value (with any method of the Scanner).
func (c *Scanner) Object(member func(key string) error) error {
	return c.ObjectBytes(func(key []byte) error { return member(string(key)) })
}

// ObjectBytes is Object with the key as bytes, valid only until member
// consumes the key's value; it spares the allocation of a string per key.
func (c *Scanner) ObjectBytes(member func(key []byte) error) error {
	if err := c.expect(KindObject, "object"); err != nil {
		return err
	}
	c.pos++
	if c.next('}') {
		return nil
	}
	for {
		key, err := c.memberKey()
		if err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		if done, err := c.afterElement('}', "inside an object", "after object value"); done || err != nil {
			return err
		}
	}
}

// memberKey reads an object key and the colon after it.
func (c *Scanner) memberKey() ([]byte, error) {
	if c.Peek() != KindString {
		return nil, c.syntaxError("where an object key was expected")
	}
	key, err := c.stringBytes(&c.key)
	if err != nil {
		return nil, err
	}
	c.space()
	if c.pos >= len(c.in) || c.in[c.pos] != ':' {
		return nil, c.syntaxError("after object key")
	}
	c.pos++
	return key, nil
}

// Array reads an array, calling element for each element; element must
// consume it.
func (c *Scanner) Array(element func() error) error {
	if err := c.expect(KindArray, "array"); err != nil {
		return err
	}
	c.pos++
	if c.next(']') {
		return nil
	}
	for {
		if err := element(); err != nil {
			return err
		}
		if done, err := c.afterElement(']', "inside an array", "after array element"); done || err != nil {
			return err
		}
	}
}

// String reads a string; null reads as "" with null true. Any other value
// is a *TypeError.
func (c *Scanner) String() (s string, null bool, err error) {
	switch c.Peek() {
	case KindString:
		s, err = c.string()
		return s, false, err
	case KindNull:
		return "", true, c.literal("null")
	case KindEnd, KindOther:
		return "", false, c.syntaxError("where a value was expected")
	}
	return "", false, c.typeError("string")
}

// StringBytes reads a string into the Scanner's scratch buffer: the bytes
// are valid until the next string is read. Any other value is a *TypeError.
func (c *Scanner) StringBytes() ([]byte, error) {
	if err := c.expect(KindString, "string"); err != nil {
		return nil, err
	}
	return c.stringBytes(&c.text)
}

// stringBytes reads the string at the current position: a slice of the
// input when it has no escapes or non-ASCII bytes, else decoded into *buf.
func (c *Scanner) stringBytes(buf *[]byte) ([]byte, error) {
	start := c.pos + 1
	if i := plainEnd(c.in, start); i < len(c.in) && c.in[i] == '"' {
		c.pos = i + 1
		return c.in[start:i], nil
	}
	decoded, err := c.decodeString((*buf)[:0])
	*buf = decoded
	return decoded, err
}

// AppendDecoded reads a string and appends it, decoded as String decodes
// it, to dst: several strings can be kept in one buffer without a copy
// each. Any other value is a *TypeError.
func (c *Scanner) AppendDecoded(dst []byte) ([]byte, error) {
	if err := c.expect(KindString, "string"); err != nil {
		return dst, err
	}
	decoded, err := c.stringBytes(&c.text)
	return append(dst, decoded...), err
}

// Bool reads a boolean; null reads as false. Any other value is a *TypeError.
func (c *Scanner) Bool() (bool, error) {
	switch c.Peek() {
	case KindTrue:
		return true, c.literal("true")
	case KindFalse, KindNull:
		return false, c.literal(map[Kind]string{KindFalse: "false", KindNull: "null"}[c.Peek()])
	}
	return false, c.typeError("boolean")
}

// Null consumes a null and reports whether the next value was one.
func (c *Scanner) Null() (bool, error) {
	if c.Peek() != KindNull {
		return false, nil
	}
	return true, c.literal("null")
}

// Skip consumes the next value, checking only its syntax.
func (c *Scanner) Skip() error {
	return c.skip(0)
}

// Raw consumes the next value and returns its bytes as written.
func (c *Scanner) Raw() ([]byte, error) {
	c.space()
	start := c.pos
	if err := c.skip(0); err != nil {
		return nil, err
	}
	return c.in[start:c.pos], nil
}

// TypeError reports a value of the wrong JSON type.
type TypeError struct {
	// Offset is where the value starts.
	Offset int
	// Want is the expected type.
	Want string
}

// Error describes the mismatch.
func (e *TypeError) Error() string {
	article := "a "
	if strings.ContainsRune("aeiou", rune(e.Want[0])) {
		article = "an "
	}
	return "expected " + article + e.Want + " at offset " + itoa(e.Offset)
}

// expect checks that the next value is of kind: another value is a
// *TypeError, no value a *SyntaxError.
func (c *Scanner) expect(kind Kind, name string) error {
	switch c.Peek() {
	case kind:
		return nil
	case KindEnd, KindOther:
		return c.syntaxError("where a value was expected")
	}
	return c.typeError(name)
}

// next consumes ch if it is the next byte after whitespace.
func (c *Scanner) next(ch byte) bool {
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ch {
		c.pos++
		return true
	}
	return false
}

func (c *Scanner) typeError(want string) error {
	c.space()
	return &TypeError{Offset: c.pos, Want: want}
}

func (c *Scanner) literal(lit string) error {
	c.space()
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		return c.syntaxError("in literal " + lit)
	}
	c.pos += len(lit)
	return nil
}

func (c *Scanner) skip(depth int) error {
	if depth > maxCanonicalDepth {
		return &SyntaxError{Offset: c.pos, Msg: "JSON nested too deeply"}
	}
	switch c.Peek() {
	case KindObject:
		return c.skipObject(depth)
	case KindArray:
		return c.skipArray(depth)
	case KindString:
		return c.skipString()
	case KindNumber:
		_, _, err := c.numberLiteral()
		return err
	case KindTrue:
		return c.literal("true")
	case KindFalse:
		return c.literal("false")
	case KindNull:
		return c.literal("null")
	}
	return c.syntaxError("where a value was expected")
}

// skipObject is ObjectBytes skipping every value, without a call through
// a function value per member.
func (c *Scanner) skipObject(depth int) error {
	c.pos++
	if c.next('}') {
		return nil
	}
	for {
		if _, err := c.memberKey(); err != nil {
			return err
		}
		if err := c.skip(depth + 1); err != nil {
			return err
		}
		if done, err := c.afterElement('}', "inside an object", "after object value"); done || err != nil {
			return err
		}
	}
}

// skipArray is Array skipping every element.
func (c *Scanner) skipArray(depth int) error {
	c.pos++
	if c.next(']') {
		return nil
	}
	for {
		if err := c.skip(depth + 1); err != nil {
			return err
		}
		if done, err := c.afterElement(']', "inside an array", "after array element"); done || err != nil {
			return err
		}
	}
}

// afterElement consumes the comma after an element of an object or array,
// or its closing byte (then done is true); where and after name the syntax
// errors of the input ending or holding anything else.
func (c *Scanner) afterElement(closing byte, where, after string) (done bool, err error) {
	c.space()
	if c.pos >= len(c.in) {
		return false, c.syntaxError(where)
	}
	switch c.in[c.pos] {
	case ',':
		c.pos++
		return false, nil
	case closing:
		c.pos++
		return true, nil
	}
	return false, c.syntaxError(after)
}

// skipString checks a string's syntax without decoding it.
func (c *Scanner) skipString() error {
	c.pos++ // opening quote
	for c.pos < len(c.in) {
		if c.pos = plainEnd(c.in, c.pos); c.pos == len(c.in) {
			break
		}
		switch ch := c.in[c.pos]; {
		case ch == '"':
			c.pos++
			return nil
		case ch < 0x20:
			return c.syntaxError("in a string (control character)")
		case ch == '\\':
			c.pos++
			if c.pos >= len(c.in) {
				return c.syntaxError("in a string escape")
			}
			switch c.in[c.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.pos++
			case 'u':
				c.pos++
				if _, ok := c.hex4(); !ok {
					return c.syntaxError("in a \\u escape")
				}
			default:
				return c.syntaxError("in a string escape")
			}
		default:
			c.pos++
		}
	}
	return c.syntaxError("in a string (unterminated)")
}

func itoa(n int) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(buf[i:])
		}
	}
}

// Rest returns the input from offset on.
func (c *Scanner) Rest(offset int) []byte { return c.in[offset:] }

// Advance moves the read position to offset.
func (c *Scanner) Advance(offset int) { c.pos = offset }
