package event

import (
	"bytes"
	"crypto/sha256"
	"strconv"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// An erased event's data is replaced by the erased form (docs/api.md
// §4.16), {"$erased":{"at":"<time>","by":"<id>"}}: the time and the id of
// the management event that erased it, in canonical order as all data. Its hash stays the one computed
// from the original data, whose SHA-256 (DataSum) the store keeps apart
// from the record so that the hash still verifies.

// ErasedType is the type of the management event an erasure appends.
const ErasedType = "io.eventstore.events-erased"

// ManagementSource is the source of the events the service writes itself.
const ManagementSource = "urn:eventstore:management"

// erasedPrefix starts the data of every erased event.
const erasedPrefix = `{"$erased":{"at":"`

// DataSum is the SHA-256 of an event's canonical data bytes (h_data).
type DataSum = [sha256.Size]byte

// ErasedData returns the erased form written by the management event with
// id by and time at (as FormatTime writes it).
func ErasedData(by uint64, at string) []byte {
	data := jsonscan.AppendString([]byte(`{"$erased":{"at":`), at)
	data = append(data, `,"by":"`...)
	data = strconv.AppendUint(data, by, 10)
	return append(data, `"}}`...)
}

// IsErased reports whether data starts as the erased form does. Only the
// store's kept digest tells an erased event from one written with such
// data.
func IsErased(data []byte) bool { return bytes.HasPrefix(data, []byte(erasedPrefix)) }

// IsErasedForm reports whether data is exactly an erased form: a time as
// FormatTime writes it and an id, nothing else. Such data holds nothing
// to erase, whoever wrote it.
func IsErasedForm(data []byte) bool {
	rest, ok := bytes.CutPrefix(data, []byte(erasedPrefix))
	if !ok {
		return false
	}
	at, digits, ok := bytes.Cut(rest, []byte(`","by":"`))
	if !ok || len(at) != len("2006-01-02T15:04:05.000000000Z") {
		return false
	}
	if _, err := ParseTime(string(at)); err != nil {
		return false
	}
	digits, ok = bytes.CutSuffix(digits, []byte(`"}}`))
	if !ok || len(digits) == 0 || len(digits) > 20 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Erase returns r with its data replaced by data (the erased form), all
// other members and the hash unchanged, and the digest of the data it
// had; sc is the scanner to use.
func Erase(r Record, data []byte, sc *jsonscan.Scanner) (Record, DataSum, error) {
	m, err := r.Split(sc)
	if err != nil {
		return Record{}, DataSum{}, err
	}
	dataEnd := len(r.JSON) - hashMemberLength
	dataStart := dataEnd - len(m[MemberData])
	out := make([]byte, 0, dataStart+len(data)+hashMemberLength)
	out = append(append(append(out, r.JSON[:dataStart]...), data...), r.JSON[dataEnd:]...)
	return Record{ID: r.ID, JSON: out}, sha256.Sum256(m[MemberData]), nil
}
