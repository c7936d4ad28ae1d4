package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Fields are the fields of a stored event, decoded from its record.
type Fields struct {
	Source          string          `json:"source"`
	Subject         string          `json:"subject"`
	Type            string          `json:"type"`
	TraceParent     string          `json:"traceparent"`
	TraceState      string          `json:"tracestate"`
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Time            string          `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	PredecessorHash string          `json:"predecessorhash"`
	Data            json.RawMessage `json:"data"`
	Hash            string          `json:"hash"`
}

// Decode returns the fields of r.
func Decode(r Record) (Fields, error) {
	var f Fields
	raw := make([]byte, 0, len(r.JSON)+1)
	raw = append(append(raw, r.JSON...), '}')
	if err := json.Unmarshal(raw, &f); err != nil {
		return Fields{}, fmt.Errorf("decode record: %w", err)
	}
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
