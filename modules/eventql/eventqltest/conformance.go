package eventqltest

import (
	_ "embed"
	"encoding/json"
	"math"
	"testing"
)

//go:embed eventql-cases.json
var casesJSON []byte

// Conformance is the conformance file: a data set, query cases and
// precondition cases.
type Conformance struct {
	Dataset struct {
		Events []Candidate `json:"events"`
	} `json:"dataset"`
	Cases             []Case             `json:"cases"`
	PreconditionProbe Candidate          `json:"preconditionProbe"`
	PreconditionCases []PreconditionCase `json:"preconditionCases"`
}

// Candidate is an event to write.
type Candidate struct {
	Source  string          `json:"source"`
	Subject string          `json:"subject"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
}

// Case is a query with its expected rows, or the kind of error it must
// end with ("static" or "runtime").
type Case struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Query       string `json:"query"`
	Expected    []any  `json:"expected"`
	Ordered     bool   `json:"ordered"`
	ExpectError string `json:"expectError"`
}

// PreconditionCase is an isEventQlQueryTrue query with the status a write
// guarded by it gets: 200, 409 or 400.
type PreconditionCase struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	Query        string `json:"query"`
	ExpectStatus int    `json:"expectStatus"`
}

// Load returns the conformance cases; a file that does not decode fails t.
func Load(t testing.TB) *Conformance {
	t.Helper()
	var c Conformance
	if err := json.Unmarshal(casesJSON, &c); err != nil {
		t.Fatalf("decode the conformance cases: %v", err)
	}
	return &c
}

// SameRows compares rows as docs/eventql.md §17 says: in order, or in any order
// when ordered is false.
func SameRows(got, want []any, ordered bool) bool {
	if len(got) != len(want) {
		return false
	}
	if ordered {
		for i := range got {
			if !SameJSON(got[i], want[i]) {
				return false
			}
		}
		return true
	}
	used := make([]bool, len(got))
next:
	for _, w := range want {
		for i, g := range got {
			if !used[i] && SameJSON(g, w) {
				used[i] = true
				continue next
			}
		}
		return false
	}
	return true
}

// SameJSON compares decoded JSON values: object key order is ignored,
// numbers compare within a relative 1e-9, everything else exactly.
func SameJSON(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !SameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !SameJSON(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}
