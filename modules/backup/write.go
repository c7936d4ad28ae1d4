package backup

import (
	"encoding/hex"
	"encoding/json"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// KeptFunc returns the digest of the original data of the erased event id,
// false when the event was not erased (store.DigestKeeper's KeptDataSum).
type KeptFunc func(id uint64) (event.DataSum, bool, error)

// AppendEvent appends the backup line of a stored record, with its newline:
//
//	{"type":"event","payload":{"event":{"specversion":…,"id":…,"time":…,"source":…,
//	"subject":…,"type":…,"datacontenttype":…[,"traceparent":…][,"tracestate":…],
//	"predecessorhash":…,"data":…},"hash":…[,"dataHash":…]}}
//
// The members' bytes are copied as stored, so data stays the canonical
// bytes its hash was computed over. An erased event's line (docs/api.md
// §4.16) carries the digest of its original data as dataHash, which kept
// returns; kept is nil for a store without erasures.
func AppendEvent(dst []byte, r event.Record, sc *jsonscan.Scanner, kept KeptFunc) ([]byte, error) {
	m, err := r.Split(sc)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"type":"event","payload":{"event":{`...)
	for i, member := range backupOrder {
		if m[member] == nil {
			continue // an optional member the record lacks
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, member.Name()...)
		dst = append(dst, '"', ':')
		dst = append(dst, m[member]...)
	}
	dst = append(dst, `},"hash":`...)
	dst = append(dst, m[event.MemberHash]...)
	if kept != nil && event.IsErased(m[event.MemberData]) {
		sum, erased, err := kept(r.ID)
		if err != nil {
			return dst, err
		}
		if erased {
			dst = append(dst, `,"dataHash":"`...)
			dst = hex.AppendEncode(dst, sum[:])
			dst = append(dst, '"')
		}
	}
	return append(dst, '}', '}', '\n'), nil
}

// backupOrder is the order of the members of a backup's event.
var backupOrder = []event.Member{
	event.MemberSpecVersion, event.MemberID, event.MemberTime, event.MemberSource, event.MemberSubject, event.MemberType,
	event.MemberDataContentType, event.MemberTraceParent, event.MemberTraceState, event.MemberPredecessorHash, event.MemberData,
}

// AppendSchema appends the backup line of a registered schema, with its
// newline.
func AppendSchema(dst []byte, eventType string, raw []byte) []byte {
	dst = append(dst, `{"type":"schema","payload":{"eventType":`...)
	dst = jsonscan.AppendString(dst, eventType)
	dst = append(dst, `,"schema":`...)
	dst = append(dst, raw...)
	return append(dst, '}', '}', '\n')
}

// AppendDataIndex appends the backup line of a data index's definition,
// with its newline: {"type":"dataIndex","payload":{"name":…,"path":…[,"eventTypes":[…]]}}.
func AppendDataIndex(dst []byte, d dataindex.Definition) []byte {
	payload, err := json.Marshal(d)
	if err != nil {
		panic(err) // strings only
	}
	dst = append(dst, `{"type":"dataIndex","payload":`...)
	dst = append(dst, payload...)
	return append(dst, '}', '\n')
}
