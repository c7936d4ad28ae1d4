package event

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// SpecVersion and DataContentType are the constant fields of every event.
const (
	SpecVersion     = "1.0"
	DataContentType = "application/json"
)

// ZeroHash is the predecessor hash of the first event.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// timeLayout is RFC 3339 in UTC with exactly nine fractional digits.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Candidate is a validated event to be written; Data holds canonical bytes.
type Candidate struct {
	Source      string
	Subject     string
	Type        string
	Data        []byte
	TraceParent string
	TraceState  string
}

// Record is a stored event in its emitted JSON form, up to and including
// the hash but without the signature and the closing brace: the signature
// depends on the key the service runs with, so it is added on output. Its
// members stand as Member tells.
type Record struct {
	ID   uint64
	JSON []byte
}

// Hash returns the hash of the record as 64 lowercase hex digits.
func (r Record) Hash() string {
	return string(r.HashBytes())
}

// HashBytes returns the hash hex digits inside the record's JSON, without copying.
func (r Record) HashBytes() []byte {
	n := len(r.JSON)
	return r.JSON[n-1-64 : n-1]
}

// NextTime returns the time of an event written at now after an event of
// time last: strictly later than last, and moved on by 1 ns when its
// nanoseconds end in 0, so the nine fractional digits never get trimmed.
func NextTime(now, last time.Time) time.Time {
	t := now.UTC()
	if !t.After(last) {
		t = last.Add(time.Nanosecond)
	}
	if t.Nanosecond()%10 == 0 {
		t = t.Add(time.Nanosecond)
	}
	return t
}

// FormatTime writes t in UTC with nine fractional digits. Event times come
// from NextTime; for other times (management events) a last digit of 0 is
// moved on by 1 ns the same way.
func FormatTime(t time.Time) string {
	return string(appendTime(nil, t))
}

func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	if t.Nanosecond()%10 == 0 {
		t = t.Add(time.Nanosecond)
	}
	return t.AppendFormat(dst, timeLayout)
}

// ParseTime parses an event time written by FormatTime.
func ParseTime(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

// Hash computes the hash of an event from its emitted field values:
// sha256(hex(sha256(metadata)) + hex(sha256(data))), where metadata is
// specversion|id|predecessorhash|time|source|subject|type|datacontenttype.
func Hash(id, predecessorHash, eventTime, source, subject, eventType string, data []byte) string {
	meta := appendMetadata(nil, id, predecessorHash, eventTime, source, subject, eventType)
	return string(appendHash(nil, sha256.Sum256(meta), sha256.Sum256(data)))
}

// appendMetadata appends the metadata the hash covers:
// specversion|id|predecessorhash|time|source|subject|type|datacontenttype.
func appendMetadata[T, U string | []byte](dst []byte, id, predecessorHash, eventTime T, source, subject, eventType U) []byte {
	dst = append(dst, SpecVersion+"|"...)
	dst = append(dst, id...)
	dst = append(dst, '|')
	dst = append(dst, predecessorHash...)
	dst = append(dst, '|')
	dst = append(dst, eventTime...)
	dst = append(dst, '|')
	dst = append(dst, source...)
	dst = append(dst, '|')
	dst = append(dst, subject...)
	dst = append(dst, '|')
	dst = append(dst, eventType...)
	return append(dst, "|"+DataContentType...)
}

// appendHash appends the hex hash of an event whose metadata hashes to
// metaSum and whose data to dataSum.
func appendHash(dst []byte, metaSum, dataSum [sha256.Size]byte) []byte {
	var sums [128]byte
	hex.Encode(sums[:64], metaSum[:])
	hex.Encode(sums[64:], dataSum[:])
	sum := sha256.Sum256(sums[:])
	return hex.AppendEncode(dst, sum[:])
}

// Seal turns a candidate into the record with id, time and predecessor
// hash, computing its hash. The record's JSON is appended to buf, which is
// returned grown; the record keeps pointing at its bytes either way.
func Seal(buf []byte, c Candidate, id uint64, eventTime time.Time, predecessorHash []byte) ([]byte, Record) {
	return seal(buf, c, id, eventTime, predecessorHash, sha256.Sum256(c.Data))
}

// SealKept is Seal for an erased event: c.Data is its erased form, and
// its hash is computed with kept, the digest of its original data.
func SealKept(buf []byte, c Candidate, id uint64, eventTime time.Time, predecessorHash []byte, kept DataSum) ([]byte, Record) {
	return seal(buf, c, id, eventTime, predecessorHash, kept)
}

func seal(buf []byte, c Candidate, id uint64, eventTime time.Time, predecessorHash []byte, dataSum DataSum) ([]byte, Record) {
	start := len(buf)
	buf = jsonscan.AppendString(append(buf, memberKeys[MemberSource]...), c.Source)
	buf = jsonscan.AppendString(append(buf, memberKeys[MemberSubject]...), c.Subject)
	buf = jsonscan.AppendString(append(buf, memberKeys[MemberType]...), c.Type)
	if c.TraceParent != "" {
		buf = jsonscan.AppendString(append(buf, memberKeys[MemberTraceParent]...), c.TraceParent)
	}
	if c.TraceState != "" {
		buf = jsonscan.AppendString(append(buf, memberKeys[MemberTraceState]...), c.TraceState)
	}
	buf = append(append(buf, memberKeys[MemberSpecVersion]...), `"`+SpecVersion+`"`...)
	buf = append(append(buf, memberKeys[MemberID]...), '"')
	idStart := len(buf)
	buf = strconv.AppendUint(buf, id, 10)
	idEnd := len(buf)
	buf = append(append(buf, '"'), memberKeys[MemberTime]...)
	buf = append(buf, '"')
	timeStart := len(buf)
	buf = appendTime(buf, eventTime)
	timeEnd := len(buf)
	buf = append(append(buf, '"'), memberKeys[MemberDataContentType]...)
	buf = append(buf, `"`+DataContentType+`"`...)
	buf = append(append(buf, memberKeys[MemberPredecessorHash]...), '"')
	buf = append(append(buf, predecessorHash...), '"')
	buf = append(append(buf, memberKeys[MemberData]...), c.Data...)
	buf = append(append(buf, memberKeys[MemberHash]...), '"')

	// The metadata is assembled past the end of the record, hashed, and cut off again.
	mark := len(buf)
	buf = appendMetadata(buf, buf[idStart:idEnd], predecessorHash, buf[timeStart:timeEnd], c.Source, c.Subject, c.Type)
	metaSum := sha256.Sum256(buf[mark:])
	buf = appendHash(buf[:mark], metaSum, dataSum)
	buf = append(buf, '"')
	return buf, Record{ID: id, JSON: buf[start:len(buf):len(buf)]}
}
