package event

import (
	"fmt"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Member is a member of a stored record. The constants are in the order
// the members stand in every record:
//
//	{"source":…,"subject":…,"type":…[,"traceparent":…][,"tracestate":…],
//	"specversion":"1.0","id":"…","time":"…","datacontenttype":"application/json",
//	"predecessorhash":"…","data":…,"hash":"<64 hex digits>"
//
// Every member but data is a string; traceparent and tracestate are left
// out when empty. The hash member has a fixed length and comes last, so
// data ends a fixed distance before the end of the record: a reader finds
// every member without scanning data.
type Member int

// The members of a stored record, in record order.
const (
	MemberSource Member = iota
	MemberSubject
	MemberType
	MemberTraceParent
	MemberTraceState
	MemberSpecVersion
	MemberID
	MemberTime
	MemberDataContentType
	MemberPredecessorHash
	MemberData
	MemberHash
)

// NumMembers is the number of members a record may have.
const NumMembers = int(MemberHash) + 1

// memberKeys start the members in a record: the separator, the quoted key
// and the colon.
var memberKeys = [NumMembers]string{
	`{"source":`, `,"subject":`, `,"type":`, `,"traceparent":`, `,"tracestate":`, `,"specversion":`,
	`,"id":`, `,"time":`, `,"datacontenttype":`, `,"predecessorhash":`, `,"data":`, hashKey,
}

const (
	// hashKey starts the last member.
	hashKey = `,"hash":`
	// hashMemberLength is the length of the last member: its key and 64
	// hex digits in quotes.
	hashMemberLength = len(hashKey) + 2 + 64
)

// Name returns the member's key, as the read APIs and EventQL name it.
func (m Member) Name() string {
	key := memberKeys[m]
	return key[2 : len(key)-2]
}

// Optional reports whether records may lack the member.
func (m Member) Optional() bool {
	return m == MemberTraceParent || m == MemberTraceState
}

// MemberNamed returns the member whose key is name.
func MemberNamed(name string) (Member, bool) {
	for m := range Member(NumMembers) {
		if m.Name() == name {
			return m, true
		}
	}
	return 0, false
}

// Members are the raw JSON values of a record's members, by Member, as
// they stand in the record: strings with their quotes, data as stored. An
// optional member the record lacks is nil.
type Members [NumMembers][]byte

// Split returns the raw values of r's members in one pass over the
// members before data; data is not scanned (see Member). sc is the
// scanner to use; it is left reset to no input. On an error the members
// read so far are returned with it.
func (r Record) Split(sc *jsonscan.Scanner) (Members, error) {
	var m Members
	in := r.JSON
	dataEnd := len(in) - hashMemberLength
	if dataEnd < 0 || string(in[dataEnd:dataEnd+len(hashKey)+1]) != hashKey+`"` || in[len(in)-1] != '"' {
		return m, fmt.Errorf("record %d does not end in a hash member", r.ID)
	}
	sc.Reset(in[:dataEnd])
	defer sc.Reset(nil)
	pos := 0
	for member := range MemberData {
		key := memberKeys[member]
		if !hasKeyAt(in[:dataEnd], pos, key) {
			if member.Optional() {
				continue
			}
			return m, fmt.Errorf("record %d lacks the member %s at offset %d", r.ID, member.Name(), pos)
		}
		sc.Advance(pos + len(key))
		if sc.Peek() != jsonscan.KindString {
			return m, fmt.Errorf("record %d: member %s is not a string", r.ID, member.Name())
		}
		raw, err := sc.Raw()
		if err != nil {
			return m, fmt.Errorf("record %d: member %s: %w", r.ID, member.Name(), err)
		}
		m[member] = raw
		pos = sc.Offset()
	}
	if !hasKeyAt(in[:dataEnd], pos, memberKeys[MemberData]) || pos+len(memberKeys[MemberData]) == dataEnd {
		return m, fmt.Errorf("record %d lacks the member data at offset %d", r.ID, pos)
	}
	m[MemberData] = in[pos+len(memberKeys[MemberData]) : dataEnd]
	m[MemberHash] = in[dataEnd+len(hashKey):]
	return m, nil
}

// Text returns the decoded value of a string member, "" when the record
// lacks it; sc is the scanner to use.
func (m *Members) Text(member Member, sc *jsonscan.Scanner) (string, error) {
	if m[member] == nil {
		return "", nil
	}
	sc.Reset(m[member])
	defer sc.Reset(nil)
	s, _, err := sc.String()
	return s, err
}

// hasKeyAt reports whether in holds key at pos.
func hasKeyAt(in []byte, pos int, key string) bool {
	return len(in)-pos >= len(key) && string(in[pos:pos+len(key)]) == key
}

// SubjectAndType returns the subject and the type of r, reading no member
// after them: what a dispatcher needs to route a record, at a fraction of
// the cost of Decode. sc is the scanner to use; it is left reset to no
// input.
func (r Record) SubjectAndType(sc *jsonscan.Scanner) (subject, eventType string, err error) {
	sc.Reset(r.JSON)
	defer sc.Reset(nil)
	pos := 0
	for member := range MemberTraceParent {
		key := memberKeys[member]
		if !hasKeyAt(r.JSON, pos, key) {
			return "", "", fmt.Errorf("record %d lacks the member %s at offset %d", r.ID, member.Name(), pos)
		}
		sc.Advance(pos + len(key))
		var s string
		var err error
		if member == MemberSource {
			err = sc.Skip()
		} else {
			s, _, err = sc.String()
		}
		if err != nil {
			return "", "", fmt.Errorf("record %d: member %s: %w", r.ID, member.Name(), err)
		}
		switch member {
		case MemberSubject:
			subject = s
		case MemberType:
			eventType = s
		}
		pos = sc.Offset()
	}
	return subject, eventType, nil
}
