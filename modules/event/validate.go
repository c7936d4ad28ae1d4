// Package event holds the event record of the store and its rules: the
// validation of candidates, the canonical form of event data, the time, hash
// and JSON form of stored events, and their optional Ed25519 signature. It is
// the shared vocabulary of the storage engine, the HTTP API and EventQL.
package event

import (
	"net/url"
	"regexp"
	"strconv"
)

// Limits of the string fields of an event.
const (
	MaxFieldLength      = 1024
	MaxTraceStateLength = 512
)

var (
	subjectPattern     = regexp.MustCompile(`^/([0-9A-Za-z_-]+(/[0-9A-Za-z_-]+)*)?$`)
	typePattern        = regexp.MustCompile(`^[0-9A-Za-z_-]{2,}(\.[0-9A-Za-z_-]+){2,}$`)
	sourcePattern      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$`)
	traceParentPattern = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)
	idPattern          = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})$`)
)

// ValidSubject reports whether s is a subject: "/" or slash-separated
// segments of [0-9A-Za-z_-], at most 1,024 bytes.
func ValidSubject(s string) bool {
	return len(s) <= MaxFieldLength && subjectPattern.MatchString(s)
}

// ValidType reports whether t is an event type: at least three dot-separated
// segments of [0-9A-Za-z_-], the first of two or more characters, at most
// 1,024 bytes.
func ValidType(t string) bool {
	return len(t) <= MaxFieldLength && typePattern.MatchString(t)
}

// ValidSource reports whether s is an absolute URI of at most 1,024 bytes.
func ValidSource(s string) bool {
	if len(s) > MaxFieldLength || !sourcePattern.MatchString(s) {
		return false
	}
	_, err := url.Parse(s)
	return err == nil
}

// ValidTraceParent reports whether s is a W3C traceparent of version 00 with
// non-zero trace and span ids.
func ValidTraceParent(s string) bool {
	return traceParentPattern.MatchString(s) &&
		s[3:35] != "00000000000000000000000000000000" &&
		s[36:52] != "0000000000000000"
}

// ParseID parses an event id as requests carry it: a decimal string without
// sign or leading zeros that fits into 19 digits.
func ParseID(s string) (uint64, bool) {
	if !idPattern.MatchString(s) {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil
}
