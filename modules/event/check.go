package event

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Values are the values of a record's members, by Member: every string
// member decoded (without quotes and escapes), data as stored. An optional
// member the record lacks is nil.
type Values [NumMembers][]byte

// Checker checks stored records as Decode followed by Fields.Verify does,
// with the same errors, but reusing its buffers instead of allocating for
// every record. It is not safe for concurrent use: one per goroutine.
type Checker struct {
	sc      *jsonscan.Scanner
	decoded []byte // the decoded string members of the record last checked
	scratch []byte // its metadata and recomputed hash
}

// NewChecker returns a Checker.
func NewChecker() *Checker { return &Checker{sc: newScanner()} }

func newScanner() *jsonscan.Scanner { return jsonscan.New(nil) }

// Check decodes r, checks that data is JSON and that r carries its own id,
// and recomputes its hash. It returns r's values, valid until the next
// Check; they point into r and into the Checker.
func (c *Checker) Check(r Record) (Values, error) {
	v, decoded, err := decodeValues(c.sc, r, c.decoded[:0])
	c.decoded = decoded
	if err != nil {
		return v, err
	}
	c.scratch, err = v.verify(c.scratch[:0], nil)
	return v, err
}

// CheckErased checks r as Check does, but recomputes its hash from kept,
// the digest of the data r had before it was erased, instead of from the
// data r holds now.
func (c *Checker) CheckErased(r Record, kept DataSum) (Values, error) {
	v, decoded, err := decodeValues(c.sc, r, c.decoded[:0])
	c.decoded = decoded
	if err != nil {
		return v, err
	}
	c.scratch, err = v.verify(c.scratch[:0], &kept)
	return v, err
}

// decodeValues returns the values of r's members, the string members
// decoded into buf (returned grown), after checking that data is JSON and
// that r carries its own id: the checks of Decode, with its errors.
func decodeValues(sc *jsonscan.Scanner, r Record, buf []byte) (Values, []byte, error) {
	m, err := r.Split(sc)
	if err != nil {
		return Values{}, buf, fmt.Errorf("decode record: %w", err)
	}
	var (
		v    Values
		ends [NumMembers]int // of each member decoded into buf (never empty: it had an escape or an invalid byte)
	)
	for member, raw := range m {
		if Member(member) == MemberData || raw == nil {
			continue
		}
		// Split checked the string's syntax: without escapes and invalid
		// UTF-8, decoding only drops its quotes.
		if text := raw[1 : len(raw)-1]; bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text) {
			v[member] = text
			continue
		}
		sc.Reset(raw)
		if buf, err = sc.AppendDecoded(buf); err != nil {
			return Values{}, buf, fmt.Errorf("decode record %d: member %s: %w", r.ID, Member(member).Name(), err)
		}
		ends[member] = len(buf)
	}
	start := 0
	for member, end := range ends {
		if end > 0 {
			v[member], start = buf[start:end:end], end
		}
	}
	v[MemberData] = m[MemberData]
	sc.Reset(m[MemberData])
	err = errors.Join(sc.Skip(), sc.End())
	sc.Reset(nil)
	if err != nil {
		return Values{}, buf, fmt.Errorf("decode record %d: data: %w", r.ID, err)
	}
	if id := strconv.AppendUint(make([]byte, 0, 20), r.ID, 10); !bytes.Equal(v[MemberID], id) {
		return Values{}, buf, fmt.Errorf("record %d carries the id %q", r.ID, v[MemberID])
	}
	return v, buf, nil
}

// verify checks the constant members and recomputes the hash from the
// values and compares it with the stored one, using scratch (returned
// grown): the checks of Fields.Verify, with its errors. A kept digest,
// unless nil, stands for the data's.
func (v *Values) verify(scratch []byte, kept *DataSum) ([]byte, error) {
	if string(v[MemberSpecVersion]) != SpecVersion || string(v[MemberDataContentType]) != DataContentType {
		return scratch, errors.New("wrong specversion or datacontenttype")
	}
	scratch = appendMetadata(scratch, v[MemberID], v[MemberPredecessorHash], v[MemberTime], v[MemberSource], v[MemberSubject], v[MemberType])
	metaSum := sha256.Sum256(scratch)
	dataSum := kept
	if dataSum == nil {
		sum := sha256.Sum256(v[MemberData])
		dataSum = &sum
	}
	scratch = appendHash(scratch[:0], metaSum, *dataSum)
	if !bytes.Equal(scratch, v[MemberHash]) {
		return scratch, fmt.Errorf("stored hash %s, recomputed %s", v[MemberHash], scratch)
	}
	return scratch, nil
}
