package event

import (
	"net/url"
	"strconv"
)

// Limits of the string fields of an event.
const (
	MaxFieldLength      = 1024
	MaxTraceStateLength = 512
)

// The rules below are those of docs/api.md §3 (given there as regular
// expressions), written out by hand because validation runs for every field
// of every event written; a fuzz test holds them equal to the expressions.

// ValidSubject reports whether s is a subject: "/" or slash-separated
// segments of [0-9A-Za-z_-], at most 1,024 bytes.
func ValidSubject(s string) bool {
	if len(s) == 0 || len(s) > MaxFieldLength || s[0] != '/' {
		return false
	}
	segment := 0
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '/':
			if segment == 0 {
				return false
			}
			segment = 0
		case isSegmentByte(c):
			segment++
		default:
			return false
		}
	}
	return len(s) == 1 || segment > 0
}

// ValidType reports whether t is an event type: at least three dot-separated
// segments of [0-9A-Za-z_-], the first of two or more characters, at most
// 1,024 bytes.
func ValidType(t string) bool {
	if len(t) > MaxFieldLength {
		return false
	}
	segments, segment := 1, 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '.':
			if segment == 0 || (segments == 1 && segment < 2) {
				return false
			}
			segments++
			segment = 0
		case isSegmentByte(c):
			segment++
		default:
			return false
		}
	}
	return segments >= 3 && segment > 0
}

// ValidSource reports whether s is an absolute URI of at most 1,024 bytes:
// a scheme, a colon and no whitespace, and Go's url.Parse accepts it.
func ValidSource(s string) bool {
	if len(s) == 0 || len(s) > MaxFieldLength || !isLetter(s[0]) {
		return false
	}
	colon := -1
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == ':' {
			colon = i
			break
		}
		if !isLetter(c) && !isDigit(c) && c != '+' && c != '.' && c != '-' {
			return false
		}
	}
	if colon < 0 || colon == len(s)-1 {
		return false
	}
	for i := colon + 1; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\f', '\r':
			return false
		}
	}
	_, err := url.Parse(s)
	return err == nil
}

// ValidTraceParent reports whether s is a W3C traceparent of version 00
// (00-<32 hex>-<16 hex>-<2 hex>, lowercase) with non-zero trace and span ids.
func ValidTraceParent(s string) bool {
	if len(s) != 55 || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	for _, part := range []string{s[3:35], s[36:52], s[53:55]} {
		for i := 0; i < len(part); i++ {
			if !isDigit(part[i]) && (part[i] < 'a' || part[i] > 'f') {
				return false
			}
		}
	}
	return s[3:35] != "00000000000000000000000000000000" && s[36:52] != "0000000000000000"
}

func isLetter(c byte) bool      { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isSegmentByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '-' }

// ParseID parses an event id as requests carry it: a decimal string without
// sign or leading zeros that fits into 19 digits.
func ParseID(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil
}
