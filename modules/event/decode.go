package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Fields are the fields of a stored event, decoded from its record.
type Fields struct {
	Source          string
	Subject         string
	Type            string
	TraceParent     string
	TraceState      string
	SpecVersion     string
	ID              string
	Time            string
	DataContentType string
	PredecessorHash string
	Data            json.RawMessage
	Hash            string
}

// Decode returns the fields of r, with data checked to be JSON and
// copied.
func Decode(r Record) (Fields, error) {
	sc := jsonscan.New(nil)
	m, err := r.Split(sc)
	if err != nil {
		return Fields{}, fmt.Errorf("decode record: %w", err)
	}
	var f Fields
	for member, dst := range [...]*string{
		MemberSource: &f.Source, MemberSubject: &f.Subject, MemberType: &f.Type,
		MemberTraceParent: &f.TraceParent, MemberTraceState: &f.TraceState, MemberSpecVersion: &f.SpecVersion,
		MemberID: &f.ID, MemberTime: &f.Time, MemberDataContentType: &f.DataContentType,
		MemberPredecessorHash: &f.PredecessorHash, MemberHash: &f.Hash,
	} {
		if dst == nil {
			continue
		}
		if *dst, err = m.Text(Member(member), sc); err != nil {
			return Fields{}, fmt.Errorf("decode record %d: member %s: %w", r.ID, Member(member).Name(), err)
		}
	}
	sc.Reset(m[MemberData])
	if err := errors.Join(sc.Skip(), sc.End()); err != nil {
		return Fields{}, fmt.Errorf("decode record %d: data: %w", r.ID, err)
	}
	f.Data = bytes.Clone(m[MemberData])
	if f.ID != strconv.FormatUint(r.ID, 10) {
		return Fields{}, fmt.Errorf("record %d carries the id %q", r.ID, f.ID)
	}
	return f, nil
}

// Verify recomputes the hash from the fields and compares it.
func (f Fields) Verify() error {
	if f.SpecVersion != SpecVersion || f.DataContentType != DataContentType {
		return errors.New("wrong specversion or datacontenttype")
	}
	if want := Hash(f.ID, f.PredecessorHash, f.Time, f.Source, f.Subject, f.Type, f.Data); f.Hash != want {
		return fmt.Errorf("stored hash %s, recomputed %s", f.Hash, want)
	}
	return nil
}
