package dataindex_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// TestKeysAgreeWithEventQL evaluates the three conjunct forms a data index
// serves with EventQL itself, for values of every kind against literals of
// every kind, and checks the lookups of dataindex against each outcome: an
// event on which the conjunct is true, or fails, has a key the lookup
// reads; one on which it is true has the literal's own key. So a lookup
// loads every event a full scan would keep or fail on.
func TestKeysAgreeWithEventQL(t *testing.T) {
	values := []string{
		`"a"`, `"42"`, `""`, `0`, `-0`, `42`, `-1`, `42.0`, `42.5`, `1e3`, `-0.0`, `9007199254740992`,
		`9007199254740993`, `9007199254740992.0`, `9007199254740993.0`, `12345678901234567890`, `true`, `false`,
		`null`, `{}`, `{"a":1}`, `[]`, `["a"]`, `["a","b"]`, `[42]`, `[42.0]`, `[true,"42"]`, `[null]`, `[["a"]]`,
		`[{"a":1}]`,
	}
	type literal struct {
		text string
		key  dataindex.Key
	}
	literals := []literal{
		{`"a"`, dataindex.String("a")}, {`"42"`, dataindex.String("42")}, {`""`, dataindex.String("")},
		{`42`, dataindex.Int(42)}, {`0`, dataindex.Int(0)}, {`-1`, dataindex.Int(-1)}, {`1000`, dataindex.Int(1000)},
		{`9007199254740992`, dataindex.Int(1 << 53)}, {`true`, dataindex.Bool(true)}, {`false`, dataindex.Bool(false)},
	}
	forms := []struct {
		where  func(lit string) string
		lookup func(dataindex.Key) []dataindex.Key
	}{
		{func(lit string) string { return "e.data.x == " + lit }, dataindex.Equal},
		{func(lit string) string { return lit + " == e.data.x" }, dataindex.Equal},
		{func(lit string) string { return "e.data.x CONTAINS " + lit }, dataindex.Contains},
		{func(lit string) string { return "[" + lit + "] CONTAINS e.data.x" }, func(k dataindex.Key) []dataindex.Key { return []dataindex.Key{k} }},
	}
	tokens, err := dataindex.Tokens("/x")
	if err != nil {
		t.Fatal(err)
	}
	for _, value := range append(values, "missing") {
		data := `{"x":` + value + `}`
		if value == "missing" {
			data = `{"y":1}`
		}
		db, err := eventqltest.NewMemDB([]eventqltest.Candidate{{Source: "https://x", Subject: "/a", Type: "io.x.t", Data: json.RawMessage(data)}})
		if err != nil {
			t.Fatal(err)
		}
		canonical, err := jsonscan.Canonicalize([]byte(data)) // as the store keeps it
		if err != nil {
			t.Fatal(err)
		}
		keys := dataindex.Keys(nil, canonical, tokens)
		for _, lit := range literals {
			for _, form := range forms {
				query := fmt.Sprintf("FROM e IN events WHERE %s PROJECT INTO e.id", form.where(lit.text))
				program, err := eventql.Compile(query)
				if err != nil {
					t.Fatalf("%s: %v", query, err)
				}
				rows := 0
				_, err = program.Run(context.Background(), db, eventql.Options{}, func(eventql.Value) error { rows++; return nil })
				read := form.lookup(lit.key)
				found := slices.ContainsFunc(keys, func(k dataindex.Key) bool { return slices.Contains(read, k) })
				switch {
				case (rows > 0 || err != nil) && !found:
					t.Errorf("%s on %s (rows %d, error %v): keys %q, the lookup reads %q", query, data, rows, err, keys, read)
				case rows > 0 && !slices.Contains(keys, lit.key):
					t.Errorf("%s on %s is true, and its keys %q lack %q", query, data, keys, lit.key)
				}
			}
		}
	}
}
