package eventql_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// FuzzCompile feeds arbitrary text to the parser and checker, and runs what
// compiles against the library data set under tight limits: nothing may
// panic or hang, and every failure must be an *Error.
func FuzzCompile(f *testing.F) {
	c := eventqltest.Load(f)
	for _, tc := range c.Cases {
		f.Add(tc.Query)
	}
	for _, tc := range c.PreconditionCases {
		f.Add(tc.Query)
	}
	for _, s := range []string{
		"", "/*", "//", `"\ud800"`, `'\u`, "1e", "((((", "[[[[", "{a:{b:", "NOT NOT NOT",
		"FROM e IN events PROJECT INTO " + strings.Repeat("(", 300),
		"FROM e IN (FROM e IN (FROM e IN events PROJECT INTO e) PROJECT INTO e) PROJECT INTO e",
		"FROM e IN events GROUP BY e.type HAVING COUNT() > 1 SKIP 1 TOP 1 PROJECT INTO DISTINCT UNIQUE(e.type)",
	} {
		f.Add(s)
	}
	db := libraryDB(f)
	f.Fuzz(func(t *testing.T, query string) {
		p, err := eventql.Compile(query)
		var qe *eventql.Error
		if err != nil {
			if !errors.As(err, &qe) || !qe.Static {
				t.Fatalf("%q: compile error %v is not a static *Error", query, err)
			}
			return
		}
		_, err = p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1 << 20, TimeLimit: 50 * time.Millisecond}, func(v eventql.Value) error {
			if !json.Valid(v.AppendJSON(nil)) {
				t.Fatalf("%q: invalid JSON row %s", query, v.AppendJSON(nil))
			}
			return nil
		})
		if err != nil && (!errors.As(err, &qe) || qe.Static) {
			t.Fatalf("%q: run error %v is not a runtime *Error", query, err)
		}
	})
}
