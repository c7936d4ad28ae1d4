package event

import (
	"bytes"
	"encoding/json"
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
	v, _, err := decodeValues(newScanner(), r, nil)
	if err != nil {
		return Fields{}, err
	}
	return Fields{
		Source: string(v[MemberSource]), Subject: string(v[MemberSubject]), Type: string(v[MemberType]),
		TraceParent: string(v[MemberTraceParent]), TraceState: string(v[MemberTraceState]),
		SpecVersion: string(v[MemberSpecVersion]), ID: string(v[MemberID]), Time: string(v[MemberTime]),
		DataContentType: string(v[MemberDataContentType]), PredecessorHash: string(v[MemberPredecessorHash]),
		Data: bytes.Clone(v[MemberData]), Hash: string(v[MemberHash]),
	}, nil
}

// Verify recomputes the hash from the fields and compares it.
func (f Fields) Verify() error { return f.verify(nil) }

// VerifyErased recomputes the hash from the fields with kept, the digest
// of the data the event had before it was erased, standing for its data's.
func (f Fields) VerifyErased(kept DataSum) error { return f.verify(&kept) }

func (f Fields) verify(kept *DataSum) error {
	v := Values{
		MemberSource: []byte(f.Source), MemberSubject: []byte(f.Subject), MemberType: []byte(f.Type),
		MemberSpecVersion: []byte(f.SpecVersion), MemberID: []byte(f.ID), MemberTime: []byte(f.Time),
		MemberDataContentType: []byte(f.DataContentType), MemberPredecessorHash: []byte(f.PredecessorHash),
		MemberData: f.Data, MemberHash: []byte(f.Hash),
	}
	_, err := v.verify(nil, kept)
	return err
}
