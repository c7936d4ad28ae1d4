package eventql

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Pos is a position in the query text: 1-based line and column, the
// column counting characters. The zero Pos means "no position".
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is a static or runtime error of a query.
type Error struct {
	// Pos is where the error is; zero for errors not tied to a token.
	Pos Pos
	// Msg describes the error.
	Msg string
	// Static tells a static error (found before evaluation) from a runtime one.
	Static bool
	// Err, when set, is the failure of the Database that ended the run; Msg
	// then says only that reading failed, without Err's text, which is for
	// the log, not for the client.
	Err error
}

// Error writes "<line>:<column>: <message>", or the message alone.
func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// Unwrap returns the failure of the Database, if that ended the run.
func (e *Error) Unwrap() error { return e.Err }

func staticErr(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Static: true}
}

func runtimeErr(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokWord
	tokInt
	tokDecimal
	tokString
	tokSymbol
)

type token struct {
	text string // the word, the symbol, or the string's decoded value
	i    int64
	f    float64
	pos  Pos
	kind tokenKind
	kw   uint8 // the keyword a word is: its place in keywordNames, 0 for none
}

// describe names the token for error messages.
func (t *token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of query"
	case tokString:
		return "string literal"
	case tokInt, tokDecimal:
		return "number " + t.text
	}
	return "'" + t.text + "'"
}

// keywordNames are the keywords, after "" (no keyword).
var keywordNames = []string{"", "FROM", "IN", "WHERE", "ORDER", "BY", "ASC", "DESC", "GROUP", "HAVING", "SKIP", "TOP",
	"PROJECT", "INTO", "DISTINCT", "AND", "OR", "XOR", "NOT", "CONTAINS", "AS", "TRUE", "FALSE", "NULL", "EVENTS",
	"SUBJECTS", "EVENTTYPES"}

// keywords maps each keyword to its place in keywordNames.
var keywords = func() map[string]uint8 {
	m := make(map[string]uint8, len(keywordNames))
	for i, kw := range keywordNames[1:] {
		m[kw] = uint8(i + 1)
	}
	return m
}()

// lookupFold looks word up in m, whose keys are upper case, ignoring the
// case of word's ASCII letters; it allocates nothing.
func lookupFold[V any](m map[string]V, word string) (V, bool) {
	var buf [16]byte
	if len(word) > len(buf) {
		var zero V
		return zero, false
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	v, ok := m[string(buf[:len(word)])]
	return v, ok
}

// isKeyword reports whether the token is the keyword kw (any case).
func (t *token) isKeyword(kw string) bool { return t.kw != 0 && keywordNames[t.kw] == kw }

// keyword returns the upper-case keyword the token is, or "".
func (t *token) keyword() string { return keywordNames[t.kw] }

// lex splits a query into tokens, appended to dst, ending with tokEOF;
// a query of more than MaxTokens tokens is an error.
func lex(dst []token, query string) ([]token, error) {
	l := lexer{src: query, line: 1, col: 1}
	tokens := dst
	if need := min(len(query)/4, MaxTokens) + 8; cap(tokens)-len(tokens) < need { // a token and its space take four bytes or so
		tokens = slices.Grow(tokens, need)
	}
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		if t.kind != tokEOF && len(tokens) == MaxTokens {
			return nil, staticErr(t.pos, "query longer than %d tokens", MaxTokens)
		}
		tokens = append(tokens, t)
		if t.kind == tokEOF {
			return tokens, nil
		}
	}
}

type lexer struct {
	src       string
	off       int
	line, col int
}

func (l *lexer) pos() Pos { return Pos{l.line, l.col} }

// advance moves past one character.
func (l *lexer) advance() {
	if c := l.src[l.off]; c < utf8.RuneSelf {
		l.off++
		if c == '\n' {
			l.line, l.col = l.line+1, 1
		} else {
			l.col++
		}
		return
	}
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += size
	if r == '\n' {
		l.line, l.col = l.line+1, 1
	} else {
		l.col++
	}
}

func (l *lexer) peek(ahead int) byte {
	if l.off+ahead < len(l.src) {
		return l.src[l.off+ahead]
	}
	return 0
}

func (l *lexer) skipSpaceAndComments() error {
	for l.off < len(l.src) {
		switch c := l.src[l.off]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			l.advance()
		case c == '/' && l.peek(1) == '/':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance()
			}
		case c == '/' && l.peek(1) == '*':
			start := l.pos()
			l.advance()
			l.advance()
			for {
				if l.off >= len(l.src) {
					return staticErr(start, "unterminated block comment")
				}
				if l.src[l.off] == '*' && l.peek(1) == '/' {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		default:
			return nil
		}
	}
	return nil
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isWordByte(c byte) bool  { return isWordStart(c) || isDigit(c) }

func (l *lexer) next() (token, error) {
	if err := l.skipSpaceAndComments(); err != nil {
		return token{}, err
	}
	pos := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: pos}, nil
	}
	c := l.src[l.off]
	switch {
	case isWordStart(c):
		start := l.off
		for l.off < len(l.src) && isWordByte(l.src[l.off]) {
			l.off++
		}
		l.col += l.off - start
		word := l.src[start:l.off]
		var kw uint8
		if len(word) > 1 { // no keyword is shorter
			kw, _ = lookupFold(keywords, word)
		}
		return token{kind: tokWord, text: word, kw: kw, pos: pos}, nil
	case isDigit(c):
		return l.number(pos)
	case c == '"' || c == '\'':
		return l.str(pos, c)
	}
	for _, sym := range []string{"==", "!=", "<=", ">="} {
		if strings.HasPrefix(l.src[l.off:], sym) {
			l.advance()
			l.advance()
			return token{kind: tokSymbol, text: sym, pos: pos}, nil
		}
	}
	if strings.IndexByte("<>+-*/()[]{},:.", c) >= 0 {
		l.advance()
		return token{kind: tokSymbol, text: l.src[l.off-1 : l.off], pos: pos}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	return token{}, staticErr(pos, "unexpected character %s", strconv.QuoteRune(r))
}

func (l *lexer) digits() {
	for l.off < len(l.src) && isDigit(l.src[l.off]) {
		l.advance()
	}
}

func (l *lexer) number(pos Pos) (token, error) {
	start := l.off
	l.digits()
	decimal := false
	if l.peek(0) == '.' {
		if !isDigit(l.peek(1)) {
			return token{}, staticErr(pos, "malformed number %s", l.src[start:l.off+1])
		}
		decimal = true
		l.advance()
		l.digits()
	}
	if c := l.peek(0); c == 'e' || c == 'E' {
		decimal = true
		l.advance()
		if c := l.peek(0); c == '+' || c == '-' {
			l.advance()
		}
		if !isDigit(l.peek(0)) {
			return token{}, staticErr(pos, "malformed number %s", l.src[start:l.off])
		}
		l.digits()
	}
	text := l.src[start:l.off]
	if isWordByte(l.peek(0)) {
		return token{}, staticErr(pos, "malformed number %s%c", text, l.peek(0))
	}
	if !decimal {
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return token{}, staticErr(pos, "integer %s is out of range", text)
		}
		return token{kind: tokInt, text: text, i: i, pos: pos}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return token{}, staticErr(pos, "number %s is out of range", text)
	}
	return token{kind: tokDecimal, text: text, f: f, pos: pos}, nil
}

func (l *lexer) str(pos Pos, quote byte) (token, error) {
	l.advance() // opening quote
	// Most literals are ASCII without escapes: their value is their text.
	for i := l.off; i < len(l.src); i++ {
		c := l.src[i]
		if c == quote {
			text := l.src[l.off:i]
			l.col += i + 1 - l.off
			l.off = i + 1
			return token{kind: tokString, text: text, pos: pos}, nil
		}
		if c == '\\' || c == '\r' || c == '\n' || c >= utf8.RuneSelf {
			break
		}
	}
	var b strings.Builder
	for {
		if l.off >= len(l.src) {
			return token{}, staticErr(pos, "unterminated string literal")
		}
		c := l.src[l.off]
		switch {
		case c == quote:
			l.advance()
			return token{kind: tokString, text: b.String(), pos: pos}, nil
		case c == '\r' || c == '\n':
			return token{}, staticErr(pos, "unterminated string literal")
		case c == '\\':
			escPos := l.pos()
			l.advance()
			r, err := l.escape(escPos)
			if err != nil {
				return token{}, err
			}
			b.WriteRune(r)
		default:
			r, size := utf8.DecodeRuneInString(l.src[l.off:])
			if r == utf8.RuneError && size == 1 {
				return token{}, staticErr(l.pos(), "invalid UTF-8 in string literal")
			}
			b.WriteRune(r)
			l.advance()
		}
	}
}

// simpleEscapes are the escapes of one character after the backslash.
var simpleEscapes = map[byte]rune{'"': '"', '\'': '\'', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func (l *lexer) escape(pos Pos) (rune, error) {
	if l.off >= len(l.src) {
		return 0, staticErr(pos, "unterminated string literal")
	}
	c := l.src[l.off]
	if r, ok := simpleEscapes[c]; ok {
		l.advance()
		return r, nil
	}
	if c != 'u' {
		r, _ := utf8.DecodeRuneInString(l.src[l.off:])
		return 0, staticErr(pos, "unknown escape sequence '\\%c'", r)
	}
	l.advance()
	r, ok := l.hex4()
	if !ok {
		return 0, staticErr(pos, "malformed \\u escape")
	}
	if utf16.IsSurrogate(r) {
		if l.peek(0) != '\\' || l.peek(1) != 'u' {
			return 0, staticErr(pos, "lone surrogate in \\u escape")
		}
		l.advance()
		l.advance()
		r2, ok := l.hex4()
		decoded := utf16.DecodeRune(r, r2)
		if !ok || decoded == utf8.RuneError {
			return 0, staticErr(pos, "lone surrogate in \\u escape")
		}
		return decoded, nil
	}
	return r, nil
}

func (l *lexer) hex4() (rune, bool) {
	if l.off+4 > len(l.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(l.src[l.off:l.off+4], 16, 32)
	if err != nil {
		return 0, false
	}
	for i := 0; i < 4; i++ {
		l.advance()
	}
	return rune(v), true
}
