package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// ErrNotObject reports a value that is not the JSON object expected.
var ErrNotObject = errors.New("data must be a JSON object")

// RangeError reports a number outside the range of float64.
type RangeError struct {
	// Literal is the number as written.
	Literal string
}

// Error describes the number.
func (e *RangeError) Error() string { return "number " + e.Literal + " is out of range" }

// SyntaxError reports malformed JSON.
type SyntaxError struct {
	// Offset is the byte offset of the problem.
	Offset int
	// Msg describes it.
	Msg string
}

// Error describes the problem and where it is.
func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset) }

// maxCanonicalDepth bounds the nesting the encoder follows; requests are
// limited to far less before they get here.
const maxCanonicalDepth = 1000

// Canonicalize returns the canonical bytes of the JSON object raw: compact,
// object keys sorted by byte order (the last of duplicate keys wins), integer
// literals with every digit kept, other numbers written as Go writes a
// float64, strings escaped as Go's encoding/json escapes them (HTML-safe,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD).
func Canonicalize(raw []byte) ([]byte, error) {
	c := New(raw)
	c.space()
	if c.pos >= len(c.in) || c.in[c.pos] != '{' {
		return nil, ErrNotObject
	}
	out, err := c.Canonical(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, err
	}
	if err := c.End(); err != nil {
		return nil, err
	}
	return out, nil
}

// Canonical appends the canonical form of the next value to out.
func (c *Scanner) Canonical(out []byte) ([]byte, error) {
	return c.value(out, 0)
}

func (c *Scanner) syntaxError(where string) error {
	if c.pos >= len(c.in) {
		return &SyntaxError{Offset: c.pos, Msg: "unexpected end of JSON input " + where}
	}
	return &SyntaxError{Offset: c.pos, Msg: fmt.Sprintf("invalid character %q %s", c.in[c.pos], where)}
}

func (c *Scanner) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *Scanner) value(out []byte, depth int) ([]byte, error) {
	if depth > maxCanonicalDepth {
		return nil, &SyntaxError{Offset: c.pos, Msg: "JSON nested too deeply"}
	}
	c.space()
	if c.pos >= len(c.in) {
		return nil, c.syntaxError("where a value was expected")
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(out, depth)
	case ch == '[':
		return c.array(out, depth)
	case ch == '"':
		decoded, err := c.decodeString(c.text[:0])
		if err != nil {
			return nil, err
		}
		c.text = decoded
		return appendJSONString(out, decoded), nil
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number(out)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
				c.pos += len(lit)
				return append(out, lit...), nil
			}
		}
		return nil, c.syntaxError("where a value was expected")
	}
}

// member is an object member being canonicalized: its key and value are
// ranges of the scratch buffers of the object's nesting level.
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
}

// level holds the scratch buffers of one nesting level; an object renders
// its members' values there before writing them sorted, and a nested object
// uses the next level, so the buffers of one Scanner serve every object
// without allocating again.
type level struct {
	members []member
	keys    []byte
	values  []byte
}

func (c *Scanner) level(depth int) *level {
	for len(c.levels) <= depth {
		c.levels = append(c.levels, &level{})
	}
	l := c.levels[depth]
	l.members, l.keys, l.values = l.members[:0], l.keys[:0], l.values[:0]
	return l
}

func (c *Scanner) object(out []byte, depth int) ([]byte, error) {
	c.pos++ // {
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(out, '{', '}'), nil
	}
	l := c.level(depth)
	for {
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return nil, c.syntaxError("where an object key was expected")
		}
		m := member{keyStart: len(l.keys)}
		var err error
		if l.keys, err = c.decodeString(l.keys); err != nil {
			return nil, err
		}
		m.keyEnd = len(l.keys)
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return nil, c.syntaxError("where ':' was expected")
		}
		c.pos++
		m.valStart = len(l.values)
		values, err := c.value(l.values, depth+1)
		if err != nil {
			return nil, err
		}
		l.values = values
		m.valEnd = len(l.values)
		l.members = append(l.members, m)
		c.space()
		if c.pos >= len(c.in) {
			return nil, c.syntaxError("inside an object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != '}' {
			return nil, c.syntaxError("where ',' or '}' was expected")
		}
		c.pos++
		break
	}
	key := func(m member) []byte { return l.keys[m.keyStart:m.keyEnd] }
	// Stable, so that among equal keys the last one written stays last.
	slices.SortStableFunc(l.members, func(a, b member) int { return bytes.Compare(key(a), key(b)) })
	out = append(out, '{')
	first := true
	for i, m := range l.members {
		if i+1 < len(l.members) && bytes.Equal(key(l.members[i+1]), key(m)) {
			continue // a later duplicate wins
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendJSONString(out, key(m))
		out = append(out, ':')
		out = append(out, l.values[m.valStart:m.valEnd]...)
	}
	return append(out, '}'), nil
}

func (c *Scanner) array(out []byte, depth int) ([]byte, error) {
	c.pos++ // [
	out = append(out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(out, ']'), nil
	}
	for {
		var err error
		if out, err = c.value(out, depth+1); err != nil {
			return nil, err
		}
		c.space()
		if c.pos >= len(c.in) {
			return nil, c.syntaxError("inside an array")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			out = append(out, ',')
			continue
		}
		if c.in[c.pos] != ']' {
			return nil, c.syntaxError("where ',' or ']' was expected")
		}
		c.pos++
		return append(out, ']'), nil
	}
}

// numberLiteral consumes a number and returns its literal and whether it
// has a fraction or an exponent.
func (c *Scanner) numberLiteral() (literal []byte, isFloat bool, err error) {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.pos < len(c.in) && c.in[c.pos] == '0' {
		c.pos++
	} else if digits() == 0 {
		return nil, false, c.syntaxError("in a number")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		isFloat = true
		c.pos++
		if digits() == 0 {
			return nil, false, c.syntaxError("in a number")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		isFloat = true
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return nil, false, c.syntaxError("in a number")
		}
	}
	return c.in[start:c.pos], isFloat, nil
}

// number copies an integer literal and rewrites any other number as Go
// writes a float64.
func (c *Scanner) number(out []byte) ([]byte, error) {
	literal, isFloat, err := c.numberLiteral()
	if err != nil {
		return nil, err
	}
	if !isFloat {
		return append(out, literal...), nil
	}
	f, err := strconv.ParseFloat(unsafe.String(&literal[0], len(literal)), 64)
	if err != nil {
		return nil, &RangeError{Literal: string(literal)}
	}
	return AppendFloat(out, f), nil
}

// AppendFloat writes f exactly as encoding/json writes a float64.
func AppendFloat(out []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	out = strconv.AppendFloat(out, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}

// string decodes the JSON string at the current position into UTF-8,
// replacing invalid UTF-8 and lone surrogates with U+FFFD.
func (c *Scanner) string() (string, error) {
	start := c.pos + 1
	// Fast path: no escapes and only ASCII up to the closing quote.
	if i := plainEnd(c.in, start); i < len(c.in) && c.in[i] == '"' {
		c.pos = i + 1
		return string(c.in[start:i]), nil
	}
	buf, err := c.decodeString(nil)
	return string(buf), err
}

// decodeString appends the decoded JSON string at the current position to buf.
func (c *Scanner) decodeString(buf []byte) ([]byte, error) {
	c.pos++ // opening quote
	for c.pos < len(c.in) {
		ch := c.in[c.pos]
		switch {
		case ch == '"':
			c.pos++
			return buf, nil
		case ch < 0x20:
			return nil, c.syntaxError("in a string (control character)")
		case ch == '\\':
			var err error
			if buf, err = c.escape(buf); err != nil {
				return nil, err
			}
		case ch < utf8.RuneSelf:
			buf = append(buf, ch)
			c.pos++
		default:
			r, size := utf8.DecodeRune(c.in[c.pos:])
			buf = utf8.AppendRune(buf, r)
			c.pos += size
		}
	}
	return nil, c.syntaxError("in a string (unterminated)")
}

func (c *Scanner) escape(buf []byte) ([]byte, error) {
	c.pos++ // backslash
	if c.pos >= len(c.in) {
		return nil, c.syntaxError("in a string escape")
	}
	ch := c.in[c.pos]
	c.pos++
	switch ch {
	case '"', '\\', '/':
		return append(buf, ch), nil
	case 'b':
		return append(buf, '\b'), nil
	case 'f':
		return append(buf, '\f'), nil
	case 'n':
		return append(buf, '\n'), nil
	case 'r':
		return append(buf, '\r'), nil
	case 't':
		return append(buf, '\t'), nil
	case 'u':
		r, ok := c.hex4()
		if !ok {
			return nil, c.syntaxError("in a \\u escape")
		}
		if utf16.IsSurrogate(r) {
			// A high surrogate followed by an escaped low surrogate is one rune.
			if c.pos+1 < len(c.in) && c.in[c.pos] == '\\' && c.in[c.pos+1] == 'u' {
				save := c.pos
				c.pos += 2
				if r2, ok := c.hex4(); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						return utf8.AppendRune(buf, dec), nil
					}
				}
				c.pos = save
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(buf, r), nil
	}
	c.pos-- // the character after the backslash is the invalid one
	return nil, c.syntaxError("in a string escape")
}

func (c *Scanner) hex4() (rune, bool) {
	if c.pos+4 > len(c.in) {
		return 0, false
	}
	var r rune
	for _, h := range c.in[c.pos : c.pos+4] {
		switch {
		case h >= '0' && h <= '9':
			h -= '0'
		case h >= 'a' && h <= 'f':
			h = h - 'a' + 10
		case h >= 'A' && h <= 'F':
			h = h - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	c.pos += 4
	return r, true
}

const hexDigits = "0123456789abcdef"

// appendJSONString is AppendString for bytes, which must not alias out.
func appendJSONString(out, b []byte) []byte {
	if len(b) == 0 {
		return append(out, '"', '"')
	}
	return AppendString(out, unsafe.String(&b[0], len(b)))
}

// AppendString appends s as a JSON string escaped exactly as Go's
// encoding/json does with HTML escaping on.
func AppendString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch b {
			case '\\', '"':
				out = append(out, '\\', b)
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// CanonicalValue returns the canonical bytes of any JSON value raw.
func CanonicalValue(raw []byte) ([]byte, error) {
	c := New(raw)
	out, err := c.Canonical(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, err
	}
	if err := c.End(); err != nil {
		return nil, err
	}
	return out, nil
}
