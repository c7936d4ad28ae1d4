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
	f.Fuzz(func(t *testing.T, query string) { compileAndRun(t, db, query) })
}

// FuzzDeepQuery builds queries of a prefix, open repeated n times, atom,
// and close repeated n times, so that it explores long chains and deep
// nesting of any construct, up to 200,000 repetitions, through every
// stage. Nothing may panic, and no stage may need more stack than
// maxTestStack.
func FuzzDeepQuery(f *testing.F) {
	guardStack(f)
	for _, seed := range []struct {
		prefix, open, atom, close string
		n                         uint32
	}{
		{where0, "1 + ", "1", "", huge},
		{where0, "1 * ", "1", "", long},
		{where0, "true AND ", "true", "", huge},
		{where0, "false OR ", "true", "", long},
		{where0, "true XOR ", "true", "", long},
		{where0, "1 == ", "1", "", huge},
		{where0, "- ", "1", "", huge},
		{where0, "NOT ", "true", "", 300},
		{where0, "(", "1", ")", 300},
		{where0, "(1 + ", "1", ") * 2", 255},
		{where0, "ABS(", "1", ")", 300},
		{where0, "IF(true, ", "1", ", 2)", 300},
		{where0, "[", "1", "]", 300},
		{where0, "{a: ", "1", "}", 300},
		{where0 + "e.data", ".a", "", "", long},
		{where0, "", "1", " AS STRING", long},
		{"", "FROM e IN (", "FROM e IN events PROJECT INTO 1", ") PROJECT INTO e", 300},
		{"FROM e IN events WHERE ", "e.type == \"a\" OR ", "e.subject == \"/b\"", "", long / 3},
	} {
		f.Add(seed.prefix, seed.open, seed.atom, seed.close, seed.n)
	}
	db := libraryDB(f)
	f.Fuzz(func(t *testing.T, prefix, open, atom, close string, n uint32) {
		n %= huge + 1
		if uint64(len(open)+len(close))*uint64(n) > 16<<20 { // the request body limit
			return
		}
		compileAndRun(t, db, prefix+nest(open, atom, close, int(n)))
	})
}

// compileAndRun compiles query and runs what compiles against db under
// tight limits: every failure must be an *Error, static from Compile and
// runtime from Run, and every row valid JSON.
func compileAndRun(t *testing.T, db eventql.Database, query string) {
	p, err := eventql.Compile(query)
	var qe *eventql.Error
	if err != nil {
		if !errors.As(err, &qe) || !qe.Static {
			t.Fatalf("%.200q: compile error %v is not a static *Error", query, err)
		}
		return
	}
	_, err = p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1 << 20, TimeLimit: 50 * time.Millisecond}, func(v eventql.Value) error {
		if !json.Valid(v.AppendJSON(nil)) {
			t.Fatalf("%.200q: invalid JSON row %.200s", query, v.AppendJSON(nil))
		}
		return nil
	})
	if err != nil && (!errors.As(err, &qe) || qe.Static) {
		t.Fatalf("%.200q: run error %v is not a runtime *Error", query, err)
	}
}
