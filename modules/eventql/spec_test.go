package eventql_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// specCase is a query on the library data set with its rows as a JSON
// array, or "static: <text>" / "runtime: <text>" for an error whose
// message (position included) contains text.
type specCase struct {
	query string
	want  string
}

// checkCases runs cases against db; rows must match in order.
func checkCases(t *testing.T, db eventql.Database, cases []specCase) {
	t.Helper()
	for _, tc := range cases {
		rows, err := run(db, tc.query)
		kind, text, _ := strings.Cut(tc.want, ": ")
		if kind == "static" || kind == "runtime" {
			var qe *eventql.Error
			switch {
			case !errors.As(err, &qe):
				t.Errorf("%s\nwant a %s error, got rows %s, error %v", tc.query, kind, mustJSON(t, rows), err)
			case qe.Static != (kind == "static"):
				t.Errorf("%s\nwant a %s error, got %v (static %v)", tc.query, kind, err, qe.Static)
			case !strings.Contains(err.Error(), text):
				t.Errorf("%s\nwant an error containing %q, got %q", tc.query, text, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s\nerror: %v", tc.query, err)
			continue
		}
		var want []any
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatalf("bad expectation %s: %v", tc.want, err)
		}
		if rows == nil {
			rows = []any{}
		}
		if !eventqltest.SameRows(rows, want, true) {
			t.Errorf("%s\n got %s\nwant %s", tc.query, mustJSON(t, rows), tc.want)
		}
	}
}

const where0 = `FROM e IN events WHERE e.id == "0" PROJECT INTO `

func TestLexicalRules(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{`FROM e IN events WHERE(e.id=="1")PROJECT INTO{t:e.data.title}`, `[{"t":"2001 - A Space Odyssey"}]`},
		{`FROM e IN events WHERE e.type == "io.eventsourcingdb.library.book-returned"PROJECT INTO e.id`, `["7"]`},
		{where0 + `[007, 1.5e2, 2E-1, 1e21, 0.25, 9223372036854775807]`, `[[7, 150, 0.2, 1e21, 0.25, 9223372036854775807]]`},
		{where0 + `9223372036854775808`, `static: 1:49: `},
		{where0 + `1.`, `static: 1:49`},
		{where0 + `.5`, `static: 1:49`},
		{where0 + `1e`, `static: 1:49`},
		{where0 + `1e+`, `static: 1:49`},
		{where0 + `3abc`, `static: 1:49`},
		{where0 + `1e400`, `static: 1:49`},
		{where0 + `["\"\'\\\/\b\f\n\r\t", '"', "'", "\u00e9\ud83d\ude00", "// not /* a comment"]`,
			`[["\"'\\/\b\f\n\r\t", "\"", "'", "é😀", "// not /* a comment"]]`},
		{where0 + `"\ud83d"`, `static: 1:50: lone surrogate`},
		{where0 + `"\ude00\ud83d"`, `static: 1:50`},
		{where0 + `"\q"`, `static: unknown escape sequence '\q'`},
		{where0 + `"\u12"`, `static: 1:50`},
		{where0 + "\"a\nb\"", `static: 1:49`},
		{where0 + `"abc`, `static: 1:49: unterminated string literal`},
		{where0 + `'abc"`, `static: unterminated string literal`},
		{`FROM e IN events WHERE e.id = "1" PROJECT INTO e`, `static: 1:29: unexpected character '='`},
		{`FROM e IN events WHERE !true PROJECT INTO e`, `static: 1:24: unexpected character '!'`},
		{`FROM e IN events WHERE true && true PROJECT INTO e`, `static: 1:29`},
		{`FROM e IN events WHERE true || true PROJECT INTO e`, `static: 1:29`},
		{where0 + `5 % 2`, `static: 1:51`},
		{where0 + `1;`, `static: 1:50`},
		{where0 + `#`, `static: 1:49`},
		{where0 + `1 /* open`, `static: 1:51`},
		{"FROM e IN events\n/* a\ncomment */ WHERE e.id == \"4\"\n// line\nPROJECT INTO e.data.name // end", `["Bob"]`},
		{"FROM e IN events\nWHERE e.idd == \"4\" PROJECT INTO e", `static: 2:9: unknown event field 'idd'`},
		{`FROM e IN events WHERE e.data.title == "Cien años" AND x PROJECT INTO e`, `static: 1:56: unknown alias 'x'`},
		{`FrOm e iN EvEnTs WhErE e.id == "0" pRoJeCt InTo CoUnT() == 1`, `[true]`},
		{`FROM e IN events WHERE E.id == "0" PROJECT INTO e`, `static: unknown alias 'E'`},
		{`FROM e IN events WHERE e.Type == "x" PROJECT INTO e`, `static: unknown event field 'Type'`},
		{`FROM from IN events PROJECT INTO 1`, `static: 1:6`},
		{`FROM e IN events WHERE e.id == "0" PROJECT INTO [e.data.from, e.data.order]`, `[[null, null]]`},
		{where0 + `{ from: 1, type: e.type, null: null, WHERE: 2 }`, `[{"from":1,"type":"io.eventsourcingdb.library.book-acquired","null":null,"WHERE":2}]`},
		{`FROM count IN events WHERE count.id == "3" PROJECT INTO count.data.name`, `["Alice"]`},
		{`FROM count IN events PROJECT INTO COUNT /* gap */ ( )`, `[11]`},
		{`FROM int IN events WHERE int.id == "4" PROJECT INTO int.data.age AS string`, `["27"]`},
		{where0 + `"5" as Int`, `[5]`},
		{where0 + `"5" AS NUMBER`, `static: unknown type 'NUMBER'`},
		{where0 + `"5" AS INTEGER`, `static: unknown type 'INTEGER'`},
		{where0 + `"5" AS FLOAT`, `static: unknown type`},
		{where0 + `"5" AS BOOL`, `static: unknown type`},
		{``, `static: empty query`},
		{" \t\r\n ", `static: empty query`},
		{"// nothing\n/* at all */", `static: empty query`},
	})
}

func TestGrammar(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{`FROM e IN events WHERE e.id == "1"`, `static: 1:35: expected PROJECT INTO, found end of query`},
		{`FROM e IN events GROUP BY e.type ORDER BY e.id PROJECT INTO COUNT()`, `static: 1:34`},
		{`FROM e IN events TOP 1 SKIP 1 PROJECT INTO e`, `static: 1:24`},
		{`FROM e IN events WHERE true WHERE true PROJECT INTO e`, `static: 1:29`},
		{`FROM e IN events HAVING true PROJECT INTO e`, `static: 1:18`},
		{`FROM e IN events PROJECT INTO e.id e.type`, `static: 1:36`},
		{`FROM e IN events PROJECT INTO e.id PROJECT INTO e.id`, `static: 1:36`},
		{`PROJECT INTO 1`, `static: 1:1`},
		{`FROM e IN events WHERE PROJECT INTO COUNT() == 0`, `static: 1:24`},
		{`FROM e IN events PROJECT INTO 1 < 2 < 3`, `static: 1:37`},
		{`FROM e IN events PROJECT INTO 1 == 1 == true`, `static: 1:38`},
		{`FROM e IN events PROJECT INTO true == NOT false`, `static: 1:39`},
		{where0 + `true == (NOT false)`, `[true]`},
		{where0 + `[[], {}]`, `[[[], {}]]`},
		{where0 + `[1, 2,]`, `static: 1:55`},
		{where0 + `{a: 1,}`, `static: 1:55`},
		{where0 + `{a: 1, a: 2}`, `static: 1:56: duplicate key 'a' in record`},
		{where0 + `{a 1}`, `static: 1:52`},
		{where0 + `COUNT(,)`, `static: 1:55`},
		{where0 + strings.Repeat("(", 256) + "1" + strings.Repeat(")", 256), `[1]`},
		{where0 + strings.Repeat("(", 257) + "1" + strings.Repeat(")", 257), `static: nesting deeper than 256 levels`},
		{where0 + strings.Repeat("[", 300) + strings.Repeat("]", 300), `static: nesting deeper than 256 levels`},
		{where0 + strings.Repeat("-", 300) + "1", `static: nesting deeper than 256 levels`},
		{where0 + strings.Repeat("NOT ", 300) + "true", `static: nesting deeper than 256 levels`},
		{where0 + "1" + strings.Repeat(" + 1", 10000), `[10001]`},
		{where0 + "true" + strings.Repeat(" AND true", 10000), `[true]`},
		{`FROM e IN events FROM x IN (FROM y IN events PROJECT INTO y) FROM z IN subjects WHERE e.id == "0" AND x.id == "1" AND z.subject == "/" PROJECT INTO [e.id, x.id, z.subject]`, `[["0", "1", "/"]]`},
		{`FROM e IN events FROM x IN (FROM y IN events WHERE y.id == e.id PROJECT INTO y) PROJECT INTO x`, `static: unknown alias 'e'`},
		{`FROM e IN (FROM e IN events WHERE e.id == "2" PROJECT INTO e.data.title) PROJECT INTO e`, `["Emma"]`},
		{`FROM e IN events FROM e IN subjects PROJECT INTO e`, `static: 1:23: duplicate alias 'e'`},
		{`FROM e IN events SKIP e.id AS INT PROJECT INTO e`, `static: 1:23`},
		{`FROM e IN unknown PROJECT INTO e`, `static: 1:11`},
		{`FROM e events PROJECT INTO e`, `static: 1:8`},
		{`FROM e IN events ORDER e.id PROJECT INTO e`, `static: 1:24`},
	})
}

func TestPrecedence(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{`FROM e IN events WHERE e.id AS INT + 1 == 2 PROJECT INTO e.id`, `["1"]`},
		{`FROM e IN events WHERE (e.id AS INT + 1) > 9 PROJECT INTO e.id`, `["9", "10"]`},
		{`FROM e IN events WHERE 7 <= e.id AS INT - 2 PROJECT INTO e.id`, `["9", "10"]`},
		{`FROM e IN events WHERE e.id AS INT - 4 > 9223372036854775805 PROJECT INTO e.id`, `[]`},
		{where0 + `"2025-01-07T23:30:00-02:00" AS DATETIME AS DATE`, `["2025-01-08"]`},
		{where0 + `-"5" AS INT`, `[-5]`},
		{where0 + `-1 AS STRING`, `static: 1:49`},
		{where0 + `[2 * 3 / 4, 10 - 4 - 3, 1 + 2 * 3, 7 / 2 AS INT, (7 / 2) AS INT, --3, +-+2]`, `[[1.5, 3, 7, 3.5, 3, 3, -2]]`},
		{`FROM e IN events WHERE NOT e.data.tags CONTAINS "scifi" AND e.type == "io.eventsourcingdb.library.book-acquired" PROJECT INTO e.id`, `["2", "9"]`},
		{`FROM e IN events WHERE NOT e.id == "0" AND e.subject == "/books/23" PROJECT INTO e.id`, `["6"]`},
		{where0 + `[true XOR true AND false, true OR true XOR true, false OR true AND false, true XOR false XOR true]`, `[[true, true, false, false]]`},
	})
}

func TestValuesAndOutput(t *testing.T) {
	db := libraryDB(t)
	checkCases(t, db, []specCase{
		{where0 + `[6 / 3, 1e21 * 1, 1e-7 * 1, 37.0 * 1, -0.0, 0.1 + 0.2, 100000000000000000000.0]`, `[[2, 1e21, 1e-7, 37, 0, 0.30000000000000004, 1e20]]`},
		{`FROM e IN events WHERE e.id == "10" PROJECT INTO [e.data.borrowedAt AS DATETIME, "2025-01-03T14:15:00.120Z" AS DATETIME, "14:15:00.250" AS TIME, "14:15:00" AS TIME, "2025-01-03" AS DATE]`,
			`[["2025-01-08T01:30:00Z", "2025-01-03T14:15:00.12Z", "14:15:00.25", "14:15:00", "2025-01-03"]]`},
		{`FROM e IN events TOP 6 / 3 PROJECT INTO e`, `static: TOP must be a non-negative INT, got FLOAT64`},
		{`FROM e IN events WHERE e.id == "9" PROJECT INTO [e.data.price, e.data.tags, e.data.title]`, `[[null, [], "Cien años de soledad"]]`},
	})
	// Raw output: float formatting, HTML-safe escaping, canonical data.
	for query, want := range map[string]string{
		where0 + `[1e21 * 1, 1e-7 * 1, 37.0 * 1, -0.0 * 1, 123456789.125]`:     `[1e+21,1e-7,37,-0,123456789.125]`,
		where0 + `"<a href='x'>&</a>"`:                                         `"\u003ca href='x'\u003e\u0026\u003c/a\u003e"`,
		`FROM e IN events WHERE e.id == "1" PROJECT INTO e.data`:               `{"author":"Arthur C. Clarke","isbn":"978-0756906788","price":25,"tags":["scifi","classic"],"title":"2001 - A Space Odyssey"}`,
		`FROM e IN events WHERE e.id == "1" PROJECT INTO { z: 1, a: 2, m: 3 }`: `{"z":1,"a":2,"m":3}`,
		`FROM s IN subjects TOP 2 PROJECT INTO s`:                              `{"subject":"/"}`,
		`FROM t IN eventtypes TOP 1 PROJECT INTO t`:                            `{"eventType":"io.eventsourcingdb.library.book-acquired","isPhantom":false}`,
		where0 + `"\u2028"`: `"\u2028"`,
	} {
		p, err := eventql.Compile(query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var got string
		if _, err := p.Run(t.Context(), db, eventql.Options{}, func(v eventql.Value) error {
			if got == "" {
				got = string(v.AppendJSON(nil))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s\n got %s\nwant %s", query, got, want)
		}
	}
}

func TestBigIntegersInData(t *testing.T) {
	db, err := eventqltest.NewMemDB([]eventqltest.Candidate{{Source: "https://x.io", Subject: "/a", Type: "x.y.z", Data: []byte(`{"big":123456789012345678901234567890,"n":25.0}`)}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := eventql.Compile(`FROM e IN events PROJECT INTO [e.data, e.data.big, e.data.n]`)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if _, err := p.Run(t.Context(), db, eventql.Options{}, func(v eventql.Value) error {
		got = string(v.AppendJSON(nil))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := `[{"big":123456789012345678901234567890,"n":25},1.2345678901234568e+29,25]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	checkCases(t, db, []specCase{
		{`FROM e IN events PROJECT INTO e.data.n AS STRING`, `["25"]`}, // canonical 25 is an INT
		{`FROM e IN events PROJECT INTO e.data.big * 1`, `[1.2345678901234568e+29]`},
	})
}

func TestStaticChecks(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{where0 + `"abc" + 1`, `static: 1:55: arithmetic needs numbers, got STRING`},
		{where0 + `e.id + 1`, `static: 1:54`},
		{where0 + `e.id > 3`, `static: 1:54: cannot compare STRING with INT`},
		{where0 + `e.id == 3`, `static: 1:54: cannot compare STRING with INT`},
		{`FROM e IN events WHERE e.time > "2025-01-01T00:00:00Z" PROJECT INTO e.id`, `static: 1:31`},
		{where0 + `NOT 1`, `static: 1:49`},
		{where0 + `1 AND true`, `static: 1:51`},
		{where0 + `"abc" CONTAINS "a"`, `static: CONTAINS needs an ARRAY, got STRING`},
		{where0 + `e.data CONTAINS 1`, `static: CONTAINS needs an ARRAY, got RECORD`},
		{where0 + `UPPER(1)`, `static: 1:49`},
		{where0 + `YEAR("2025-01-01")`, `static: 1:49`},
		{where0 + `SUBSTRING(e.type, 1.5)`, `static: 1:49`},
		{where0 + `-"5"`, `static: 1:49`},
		{where0 + `[1] < [2]`, `static: 1:53`},
		{where0 + `true < false`, `static: 1:54`},
		{where0 + `{a: 1} == [1]`, `static: 1:56`},
		{where0 + `true AS INT`, `static: 1:54: cannot convert BOOLEAN to INT`},
		{where0 + `[1] AS STRING`, `static: cannot convert ARRAY to STRING`},
		{where0 + `e.time AS INT`, `static: cannot convert DATETIME to INT`},
		{where0 + `e.data AS STRING`, `static: cannot convert RECORD to STRING`},
		{where0 + `("2025-01-01" AS DATE) AS TIME`, `static: cannot convert DATE to TIME`},
		{where0 + `1 AS DATE`, `static: cannot convert INT to DATE`},
		{`FROM e IN events WHERE 42 PROJECT INTO e`, `static: 1:18: WHERE condition must be BOOLEAN, got INT`},
		{`FROM e IN events WHERE e.subject PROJECT INTO e`, `static: WHERE condition must be BOOLEAN, got STRING`},
		{`FROM e IN events WHERE e.data PROJECT INTO e`, `static: WHERE condition must be BOOLEAN, got RECORD`},
		{`FROM e IN events WHERE null PROJECT INTO e`, `[]`},
		{`FROM e IN events ORDER BY e.data PROJECT INTO e`, `static: 1:18: cannot order by RECORD`},
		{`FROM e IN events ORDER BY true PROJECT INTO e`, `static: cannot order by BOOLEAN`},
		{`FROM e IN events GROUP BY e.type HAVING COUNT() PROJECT INTO COUNT()`, `static: HAVING condition must be BOOLEAN, got INT`},
		{where0 + `FOO(e.id)`, `static: 1:49: unknown function 'FOO'`},
		{where0 + `UPPER(e.id, e.type)`, `static: UPPER expects 1 argument, got 2`},
		{where0 + `PI(1)`, `static: PI expects 0 arguments, got 1`},
		{where0 + `ROUND(1.5, 2)`, `static: 1:49`},
		{where0 + `SUBSTRING("a")`, `static: 1:49`},
		{where0 + `COUNT(1, 2)`, `static: 1:49`},
		{where0 + `IF(1, 2, 3)`, `static: 1:49`},
		{where0 + `IF(true, 1)`, `static: 1:49`},
		{`FROM s IN subjects PROJECT INTO s.name`, `static: 1:35`},
		{`FROM t IN eventtypes PROJECT INTO t.name`, `static: 1:37`},
		{`FROM t IN eventtypes WHERE t.EVENTTYPE == "io.eventsourcingdb.library.book-returned" PROJECT INTO [t.eventtype, t.IsPhantom, t.SCHEMA]`,
			`[["io.eventsourcingdb.library.book-returned", false, null]]`},
		{`FROM x IN (FROM t IN eventtypes PROJECT INTO t) TOP 1 PROJECT INTO [x.EVENTTYPE, x.foo]`, `[["io.eventsourcingdb.library.book-acquired", null]]`},
		{`FROM e IN events SKIP 11 PROJECT INTO 1 / 0`, `[]`},
		{`FROM e IN events SKIP "1" AS INT TOP 1 + 1 PROJECT INTO e.id`, `["1", "2"]`},
		{`FROM e IN events SKIP -1 PROJECT INTO e.id`, `static: 1:23: SKIP must be a non-negative INT`},
		{`FROM e IN events TOP null PROJECT INTO e.id`, `static: TOP must be a non-negative INT, got NULL`},
		{`FROM e IN events TOP 1 / 0 PROJECT INTO e.id`, `static: 1:24`},
		{`FROM e IN events TOP "x" AS INT PROJECT INTO e.id`, `static: 1:26`},
		{`FROM e IN events TOP COUNT() PROJECT INTO e.id`, `static: aggregate COUNT is not allowed in TOP`},
		{`FROM e IN events TOP 0 PROJECT INTO e.id`, `[]`},
		{`FROM e IN events TOP 0 PROJECT INTO COUNT()`, `[]`},
		{`FROM e IN events SKIP 100 PROJECT INTO e.id`, `[]`},
		{`FROM e IN events WHERE 1 / 0 > 0 AND false PROJECT INTO e.id`, `runtime: 1:26`},
	})
}

func TestConversions(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{where0 + `[null AS STRING, null AS INT, null AS DATE]`, `[[null, null, null]]`},
		{where0 + `["0042" AS INT, "-7" AS INT, "+7" AS INT, "9223372036854775807" AS INT]`, `[[42, -7, 7, 9223372036854775807]]`},
		{where0 + `"12.5" AS INT`, `runtime: 1:56`},
		{where0 + `"1e3" AS INT`, `runtime: 1:55`},
		{where0 + `" 7" AS INT`, `runtime: 1:54`},
		{where0 + `"9223372036854775808" AS INT`, `runtime: 1:71`},
		{where0 + `"" AS INT`, `runtime: 1:52`},
		{where0 + `["2.5e1" AS FLOAT64, "12" AS FLOAT64, "-1.5E-1" AS FLOAT64]`, `[[25, 12, -0.15]]`},
		{where0 + `"NaN" AS FLOAT64`, `runtime`},
		{where0 + `"Inf" AS FLOAT64`, `runtime`},
		{where0 + `".5" AS FLOAT64`, `runtime`},
		{where0 + `"0x10" AS FLOAT64`, `runtime`},
		{where0 + `"1e999" AS FLOAT64`, `runtime`},
		{where0 + `["TRUE" AS BOOLEAN, "false" AS BOOLEAN, "tRuE" AS BOOLEAN]`, `[[true, false, true]]`},
		{where0 + `"yes" AS BOOLEAN`, `runtime`},
		{where0 + `"1" AS BOOLEAN`, `runtime`},
		{where0 + `["2025-01-07T23:30:00-02:00" AS DATETIME, "2025-01-07t23:30:00.5z" AS DATETIME, "2025-01-07T23:30:00.123456789+23:59" AS DATETIME]`,
			`[["2025-01-08T01:30:00Z", "2025-01-07T23:30:00.5Z", "2025-01-06T23:31:00.123456789Z"]]`},
		{where0 + `"2025-02-30T00:00:00Z" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T24:00:00Z" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T23:60:00Z" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T23:00:60Z" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T23:00:00+24:00" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T23:00:00" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T23:00:00.Z" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01T23:00:00.1234567890Z" AS DATETIME`, `runtime`},
		{where0 + `"2025-01-01" AS DATETIME`, `runtime`},
		{where0 + `["2025-01-07" AS DATE, "2025-01-07T23:30:00-02:00" AS DATE, "2024-02-29" AS DATE]`, `[["2025-01-07", "2025-01-08", "2024-02-29"]]`},
		{where0 + `"2025-02-30" AS DATE`, `runtime: 1:62`},
		{where0 + `"2025-2-3" AS DATE`, `runtime`},
		{where0 + `["14:15:00" AS TIME, "23:59:59.999999999" AS TIME, "00:00:00.10" AS TIME]`, `[["14:15:00", "23:59:59.999999999", "00:00:00.1"]]`},
		{where0 + `"24:00:00" AS TIME`, `runtime`},
		{where0 + `"14:15" AS TIME`, `runtime`},
		{where0 + `[18.5 AS INT, -18.5 AS INT, 18.999 AS INT, 25 AS FLOAT64, 9007199254740993 AS FLOAT64]`, `[[18, -18, 18, 25, 9007199254740992]]`},
		{where0 + `1e19 AS INT`, `runtime`},
		{where0 + `[(-42) AS STRING, 18.5 AS STRING, 1e21 AS STRING, 25.0 AS STRING, true AS STRING]`, `[["-42", "18.5", "1e+21", "25", "true"]]`},
		{where0 + `[("2025-01-03T14:15:00.120Z" AS DATETIME) AS STRING, ("2025-01-03" AS DATE) AS STRING, ("07:08:09.5" AS TIME) AS STRING]`,
			`[["2025-01-03T14:15:00.12Z", "2025-01-03", "07:08:09.5"]]`},
		{where0 + `[("2025-01-03" AS DATE) AS DATETIME, ("2025-01-03T14:15:00+02:00" AS DATETIME) AS TIME, "x" AS STRING]`, `[["2025-01-03T00:00:00Z", "12:15:00", "x"]]`},
		{where0 + `e.data.tags AS STRING`, `runtime: 1:61`},
		{where0 + `e.data.title AS DATE`, `runtime`},
		{where0 + `e.data.price AS BOOLEAN`, `runtime`},
	})
}

func TestOperators(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{where0 + `[25 == 25.0, 1 != 1.0, null == null, null != null, 1 == null, "a" == "a", "a" == "A"]`, `[[true, false, true, false, false, true, false]]`},
		{where0 + `[{a: 1, b: [1, 2]} == {b: [1, 2.0], a: 1}, {a: 1} == {a: 1, b: 2}, [1, "a"] == [1, 2], [null] == [null], [null] == [1], {a: null} == {}]`,
			`[[true, false, false, true, false, false]]`},
		{where0 + `("2025-01-03T15:15:00+01:00" AS DATETIME == "2025-01-03T14:15:00Z" AS DATETIME)`, `[true]`},
		{where0 + `[("10:00:00" AS TIME) < ("9:00:00" AS TIME)]`, `runtime`},
		{`FROM e IN events WHERE e.data.readerId != "r2" AND e.subject == "/books/42" PROJECT INTO e.id`, `["1", "5", "7"]`},
		{`FROM e IN events WHERE e.data.cardNumber == 42 PROJECT INTO e.id`, `runtime: 1:42: cannot compare STRING with INT`},
		{`FROM e IN events WHERE e.data.title == e.data.price AND e.id == "0" PROJECT INTO e`, `runtime: cannot compare`},
		{where0 + `["Zebra" < "apple", "é" > "z", 2 < 10.5, "10" < "9", null < 1, 1 >= null]`, `[[true, true, true, true, null, null]]`},
		{where0 + `[("2025-01-02" AS DATE) > ("2025-01-01" AS DATE), ("10:00:00" AS TIME) <= ("09:59:59" AS TIME), e.time < NOW()]`, `[[true, false, true]]`},
		{where0 + `e.data.tags < e.data.tags`, `runtime: 1:61`},
		{where0 + `[7 / 2, 6 / 3, 2 * 3, 2 * 1.5, 5 - 7, null + 1, -null]`, `[[3.5, 2, 6, 3, -2, null, null]]`},
		{where0 + `1 / 0`, `runtime: 1:51: division by zero`},
		{where0 + `1 / 0.0`, `runtime: 1:51`},
		{where0 + `9223372036854775807 + 1`, `runtime: 1:69`},
		{where0 + `-9223372036854775807 - 2`, `runtime`},
		{where0 + `4611686018427387904 * 2`, `runtime`},
		{where0 + `-(-9223372036854775807 - 1)`, `runtime: 1:49`},
		{where0 + `1e308 * 10`, `runtime: not a finite number`},
		{where0 + `"a" + "b"`, `static`},
		{where0 + `e.data.title + 1`, `runtime: 1:62: arithmetic needs numbers, got STRING`},
		{where0 + `-e.data.title`, `runtime: 1:49`},
		{where0 + `[true AND true, true AND false, false AND false, true AND null, false AND null, null AND null]`, `[[true, false, false, null, false, null]]`},
		{where0 + `[true OR true, true OR false, false OR false, true OR null, false OR null, null OR null]`, `[[true, true, false, true, null, null]]`},
		{where0 + `[true XOR true, true XOR false, false XOR false, true XOR null, false XOR null, null XOR null, NOT true, NOT false, NOT null]`,
			`[[false, true, false, null, null, null, false, true, null]]`},
		{where0 + `false AND 1 / 0 > 0`, `[false]`},
		{where0 + `true OR 1 / 0 > 0`, `[true]`},
		{where0 + `false XOR 1 / 0 > 0`, `runtime: 1:61`},
		{where0 + `e.data.title AND true`, `runtime: 1:62`},
		{where0 + `NOT e.data.title`, `runtime: 1:49`},
		{where0 + `true AND e.data.price`, `runtime: 1:54`},
		{where0 + `[[1, "a", null] CONTAINS "a", [1, "a"] CONTAINS 2, [1.0] CONTAINS 1, [[1, 2]] CONTAINS [1, 2], [] CONTAINS 1, null CONTAINS 1, [null] CONTAINS null, [1] CONTAINS null]`,
			`[[true, false, true, true, false, null, true, false]]`},
		{where0 + `[{a: 1}] CONTAINS {a: 1.0}`, `[true]`},
		{where0 + `e.data.title CONTAINS "u"`, `runtime: 1:62: CONTAINS needs an ARRAY, got STRING`},
		{where0 + `[e.data.title.length, e.data.x.y.z, e.data.tags.x, e.data.price.x, null.x]`, `[[null, null, null, null, null]]`},
		{`FROM e IN events WHERE e.id == "5" PROJECT INTO [e.data.reader.name, e.data.reader.missing]`, `[["Alice", null]]`},
	})
}

func TestFunctions(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{where0 + `[ABS(-3), ABS(-2.5), ABS(4), ABS(null)]`, `[[3, 2.5, 4, null]]`},
		{where0 + `ABS(-9223372036854775807 - 1)`, `runtime: 1:49`},
		{where0 + `[CEIL(18.5), CEIL(5), CEIL(-1.5), FLOOR(-1.5), FLOOR(2), FLOOR(2.9)]`, `[[19, 5, -1, -2, 2, 2]]`},
		{where0 + `CEIL(1e19)`, `runtime: 1:49`},
		{where0 + `[ROUND(2.5), ROUND(-2.5), ROUND(18.4), ROUND(7), ROUND(0.49999999999999994)]`, `[[3, -3, 18, 7, 0]]`},
		{where0 + `[POW(2, 10), POW(2, -1), POW(9, 0.5), SQRT(16), EXP(0), COS(0), PI()]`, `[[1024, 0.5, 3, 4, 1, 1, 3.141592653589793]]`},
		{where0 + `POW(0, -1)`, `runtime: 1:49`},
		{where0 + `POW(-8, 0.5)`, `runtime: 1:49`},
		{where0 + `SQRT(-1)`, `runtime: 1:49`},
		{where0 + `EXP(1000)`, `runtime: 1:49`},
		{where0 + `SQRT(e.data.title)`, `runtime: 1:49`},
		{where0 + `CEIL(e.data.title)`, `runtime`},
		{where0 + `[RAND() >= 0 AND RAND() < 1, RAND() == RAND()]`, `[[true, false]]`},
		{`FROM e IN events WHERE e.id == "9" PROJECT INTO [LEN(e.data.title), UPPER(e.data.title), LOWER("ÄÖÜ"), LEN("")]`, `[[20, "CIEN AÑOS DE SOLEDAD", "äöü", 0]]`},
		{where0 + `[TRIM(" \t a b \n"), LTRIM("  a "), RTRIM("  a "), TRIM("\u00a0x\u3000")]`, `[["a b", "a ", "  a", "x"]]`},
		{where0 + `[SUBSTRING("abcdef", 2), SUBSTRING("abcdef", -2, 3), SUBSTRING("abc", 5), SUBSTRING("abc", 1, -1), SUBSTRING("abcdef", 2, 100), SUBSTRING("años", 1, 2), SUBSTRING("abc", 3)]`,
			`[["cdef", "abc", "", "", "cdef", "ño", ""]]`},
		{where0 + `SUBSTRING(e.type, 27)`, `["book-acquired"]`},
		{where0 + `SUBSTRING("abc", 1.0 AS INT, "2" AS INT)`, `["bc"]`},
		{where0 + `SUBSTRING("abc", 1 / 1)`, `static: 1:49`},
		{where0 + `SUBSTRING("abc", e.data.price)`, `runtime: 1:49`},
		{where0 + `[INSTR("abcabc", "c"), INSTR("abc", ""), INSTR("abc", "x"), INSTR("años de", "d"), INSTR("abc", "C")]`, `[[2, 0, -1, 5, -1]]`},
		{where0 + `[REPLACE("aaa", "aa", "b"), REPLACE("a-b-c", "-", "+"), REPLACE("abc", "", "x"), REPLACE("abc", "b", "")]`, `[["ba", "a+b+c", "abc", "ac"]]`},
		{where0 + `[STARTSWITH("/books/42", "/books/4"), STARTSWITH("abc", ""), ENDSWITH("abc", "bc"), ENDSWITH("abc", "b"), STARTSWITH(null, "a")]`, `[[true, true, true, false, null]]`},
		{where0 + `[UPPER(null), LEN(null), SUBSTRING("abc", null), REPLACE("a", null, "b"), YEAR(null), POW(null, 1)]`, `[[null, null, null, null, null, null]]`},
		{where0 + `[WEEKDAY("2025-01-17" AS DATE), WEEKDAY("2025-01-19" AS DATE), YEAR("2024-12-31" AS DATE), MONTH("2024-12-31" AS DATE), DAY("2024-12-31" AS DATE)]`, `[[5, 0, 2024, 12, 31]]`},
		{`FROM e IN events WHERE e.id == "10" PROJECT INTO [YEAR(e.data.borrowedAt AS DATETIME), DAY(e.data.borrowedAt AS DATETIME), HOUR(e.data.borrowedAt AS DATETIME), MINUTE("07:08:09.9" AS TIME), SECOND("07:08:09.9" AS TIME), HOUR("23:00:00" AS TIME)]`,
			`[[2025, 8, 1, 8, 9, 23]]`},
		{`FROM e IN events WHERE e.id == "3" PROJECT INTO YEAR(e.data.memberSince)`, `runtime: 1:49`},
		{where0 + `HOUR("2025-01-01" AS DATE)`, `static: 1:49`},
		{where0 + `YEAR("10:00:00" AS TIME)`, `static: 1:49`},
		{where0 + `[YEAR(e.time), MONTH(e.time), HOUR(e.time) >= 0, NOW() == NOW(), YEAR(NOW()) >= 2025]`, `[[2025, 1, true, true, true]]`},
		{where0 + `[IF(true, 1, 2), IF(false, 1, 2), IF(null, 1, 2), IF(true, 1, 1 / 0), IF(false, 1 / 0, "x")]`, `[[1, 2, 2, 1, "x"]]`},
		{where0 + `IF(e.data.title, 1, 2)`, `runtime: 1:49`},
		{where0 + `IF(true, 1, "a") + 1`, `[2]`},
		{where0 + `IF(true, "a", "b") + 1`, `static: 1:68`},
		{where0 + `iF(TRUE, upper("a"), NULL)`, `["A"]`},
	})
}

func TestAggregatesAndGrouping(t *testing.T) {
	const acquired = `FROM e IN events WHERE e.type == "io.eventsourcingdb.library.book-acquired" `
	const borrowed = `FROM e IN events WHERE e.type == "io.eventsourcingdb.library.book-borrowed" `
	checkCases(t, libraryDB(t), []specCase{
		{acquired + `PROJECT INTO [SUM(e.data.price), AVG(e.data.price), MIN(e.data.price), MAX(e.data.price), MEDIAN(e.data.price), VARIANCE(e.data.price), STDDEV(e.data.price), COUNT(), COUNT(e.data.price > 15)]`,
			`[[55.5, 18.5, 12, 25, 18.5, 42.25, 6.5, 4, 2]]`},
		{borrowed + `PROJECT INTO [MEDIAN(e.data.reader.age), SUM(e.data.reader.age), SUM(e.data.reader.age) AS STRING, SUM(1), MIN(e.data.readerId), MAX(e.subject)]`, `[[30.5, 122, "122", 4, "r1", "/books/7"]]`},
		{`FROM e IN events TOP 2 PROJECT INTO COUNT()`, `[11]`},
		{`FROM e IN events SKIP 1 PROJECT INTO COUNT()`, `[]`},
		{`FROM e IN events WHERE e.type == "x.y.z" PROJECT INTO COUNT() == 0`, `[true]`},
		{acquired + `PROJECT INTO { label: "x", n: COUNT(), avg: SUM(e.data.price) / COUNT(e.data.price != null) }`, `[{"label": "x", "n": 4, "avg": 18.5}]`},
		{acquired + `PROJECT INTO SUM(e.data.price AS INT)`, `[55]`},
		{`FROM e IN events PROJECT INTO [MAX(e.time) > MIN(e.time), MIN(e.time AS DATE) == MAX(e.time AS DATE)]`, `[[true, true]]`},
		{`FROM e IN events WHERE e.subject == "/books/42" PROJECT INTO [UNIQUE(e.subject), UNIQUE(e.data.missing)]`, `[["/books/42", null]]`},
		{`FROM e IN events PROJECT INTO UNIQUE(e.data.price)`, `runtime: 1:31`},
		{`FROM e IN events GROUP BY e.subject HAVING COUNT() == 1 PROJECT INTO { subject: UNIQUE(e.subject), type: UNIQUE(e.type) }`,
			`[{"subject": "/readers/r1", "type": "io.eventsourcingdb.library.reader-registered"}, {"subject": "/readers/r2", "type": "io.eventsourcingdb.library.reader-registered"}, {"subject": "/books/99", "type": "io.eventsourcingdb.library.book-acquired"}]`},
		{`FROM e IN events GROUP BY e.subject PROJECT INTO UNIQUE(e.type)`, `runtime: 1:50: UNIQUE`},
		{`FROM e IN events GROUP BY e.subject SKIP 3 TOP 1 PROJECT INTO UNIQUE(e.type)`, `["io.eventsourcingdb.library.reader-registered"]`},
		{`FROM e IN events GROUP BY e.data.price PROJECT INTO [UNIQUE(e.data.price), COUNT()]`, `[[18.5, 1], [25, 1], [12, 1], [null, 8]]`},
		{`FROM e IN events GROUP BY IF(e.id == "0", 1, IF(e.id == "1", 1.0, IF(e.id == "2", "1", null))) PROJECT INTO COUNT()`, `[2, 1, 8]`},
		{`FROM e IN events WHERE e.type == "x.y.z" GROUP BY e.type PROJECT INTO COUNT()`, `[]`},
		{`FROM e IN events GROUP BY e.type HAVING null PROJECT INTO COUNT()`, `[]`},
		{`FROM e IN events GROUP BY e.type HAVING UNIQUE(e.subject) == "/books/42" PROJECT INTO COUNT()`, `runtime: 1:41`},
		{`FROM e IN events GROUP BY e.type HAVING MAX(e.data.age) > 30 PROJECT INTO UNIQUE(e.type)`, `["io.eventsourcingdb.library.reader-registered"]`},
		{`FROM e IN events ORDER BY e.id AS INT DESC GROUP BY e.subject TOP 2 PROJECT INTO UNIQUE(e.subject)`, `["/books/7", "/books/99"]`},
		{`FROM e IN events PROJECT INTO COUNT(e.data.title)`, `runtime: 1:31`},
		{`FROM e IN events PROJECT INTO SUM(e.data.title)`, `runtime: 1:31`},
		{`FROM e IN events PROJECT INTO SUM(IF(e.id == "0", 9223372036854775807, 1))`, `runtime: 1:31`},
		{`FROM e IN events PROJECT INTO MAX(IF(e.id == "0", e.data.title, e.data.price))`, `runtime: 1:31`},
		{`FROM e IN events PROJECT INTO MIN(e.data.tags)`, `runtime: 1:31`},
		{`FROM e IN events PROJECT INTO AVG(e.data.title)`, `runtime`},
		{`FROM e IN events PROJECT INTO MEDIAN(e.data.title)`, `runtime`},
		{`FROM e IN events PROJECT INTO STDDEV(e.data.title)`, `runtime`},
		{`FROM e IN events PROJECT INTO [SUM(e.data.age), SUM(e.data.price), VARIANCE(e.data.age), STDDEV(e.data.age)]`, `[[61, 55.5, 24.5, 4.949747468305833]]`},
		{`FROM e IN events WHERE e.id == "0" PROJECT INTO [VARIANCE(e.data.price), STDDEV(e.data.price), MEDIAN(e.data.price)]`, `[[null, null, 18.5]]`},
		{`FROM e IN events WHERE COUNT() > 1 PROJECT INTO e`, `static: 1:24: aggregate COUNT is not allowed in WHERE`},
		{`FROM e IN events ORDER BY COUNT() PROJECT INTO e`, `static: aggregate COUNT is not allowed in ORDER BY`},
		{`FROM e IN events GROUP BY COUNT() PROJECT INTO COUNT()`, `static: aggregate COUNT is not allowed in GROUP BY`},
		{`FROM e IN events PROJECT INTO SUM(COUNT())`, `static: 1:35`},
		{`FROM e IN events PROJECT INTO { id: e.id, n: COUNT() }`, `static: 1:37: e.id must be inside an aggregate in a grouped query`},
		{`FROM e IN events GROUP BY e.type PROJECT INTO { type: e.type, n: COUNT() }`, `static: 1:55`},
		{`FROM e IN events GROUP BY e.type PROJECT INTO "x"`, `static: 1:18`},
		{`FROM e IN events GROUP BY e.type HAVING e.id == "1" PROJECT INTO COUNT()`, `static: 1:41`},
		{`FROM e IN events PROJECT INTO COUNT(1)`, `static: 1:31`},
		{`FROM e IN events PROJECT INTO SUM("a")`, `static: 1:31`},
		{`FROM e IN events PROJECT INTO MIN(true)`, `static: 1:31`},
		{`FROM e IN events PROJECT INTO MEDIAN()`, `static: 1:31`},
		{`FROM e IN events PROJECT INTO SUM(1) + COUNT() * 2`, `[33]`},
		{`FROM x IN (FROM e IN events GROUP BY e.type PROJECT INTO COUNT()) PROJECT INTO x`, `[4, 2, 4, 1]`},
		{`FROM x IN (FROM e IN events PROJECT INTO e.id) PROJECT INTO COUNT()`, `[11]`},
		{`FROM e IN events GROUP BY e.type PROJECT INTO DISTINCT COUNT() > 1`, `[true, false]`},
	})
}

func TestSourcesAndEvaluation(t *testing.T) {
	checkCases(t, libraryDB(t), []specCase{
		{`FROM s IN subjects PROJECT INTO s`, `[{"subject":"/"},{"subject":"/books"},{"subject":"/books/23"},{"subject":"/books/42"},{"subject":"/books/7"},{"subject":"/books/99"},{"subject":"/readers"},{"subject":"/readers/r1"},{"subject":"/readers/r2"}]`},
		{`FROM a IN events FROM b IN events PROJECT INTO COUNT()`, `[121]`},
		{`FROM a IN events FROM b IN events WHERE a.id AS INT + b.id AS INT == 1 PROJECT INTO [a.id, b.id]`, `[["0", "1"], ["1", "0"]]`},
		{`FROM a IN events FROM r IN (FROM e IN events TOP 1 PROJECT INTO RAND()) PROJECT INTO DISTINCT r < 1`, `[true]`},
		{`FROM a IN events FROM r IN (FROM e IN events TOP 1 PROJECT INTO RAND()) PROJECT INTO COUNT(r == UNIQUE(r))`, `static`},
		{`FROM a IN events FROM r IN (FROM e IN events TOP 1 PROJECT INTO RAND()) GROUP BY r PROJECT INTO COUNT()`, `[11]`},
		{`FROM x IN (FROM e IN events WHERE e.id == "3" PROJECT INTO e) PROJECT INTO [x.data.name, x.foo, x.id, x.specversion, x.signature, x.traceparent]`, `[["Alice", null, "3", "1.0", null, null]]`},
		{`FROM x IN (FROM e IN events WHERE e.id == "3" PROJECT INTO [e]) PROJECT INTO x[0]`, `static: 1:79`},
		{`FROM e IN events TOP 3 PROJECT INTO DISTINCT e.type`, `["io.eventsourcingdb.library.book-acquired"]`},
		{`FROM e IN events WHERE e.data.title + 1 > 0 AND e.type == "io.eventsourcingdb.library.book-returned" PROJECT INTO e.id`, `[]`},
		{`FROM e IN events WHERE e.data.title + 1 > 0 AND STARTSWITH(e.type, "io.eventsourcingdb.library.book-returned") PROJECT INTO e.id`, `runtime: 1:37`},
		{`FROM e IN events WHERE e.data.price > 100 AND e.id AS INT >= 10 PROJECT INTO e.id`, `[]`},
		{`FROM e IN events WHERE e.data.title == null AND e.data.price > 1 PROJECT INTO e.id`, `[]`},
		{`FROM e IN events ORDER BY e.subject DESC PROJECT INTO e.id`, `["4", "3", "9", "2", "10", "1", "5", "7", "8", "0", "6"]`},
		{`FROM e IN events ORDER BY e.id PROJECT INTO e.id`, `["0", "1", "10", "2", "3", "4", "5", "6", "7", "8", "9"]`},
		{`FROM e IN events ORDER BY e.id AS INT DESC SKIP 2 TOP 3 PROJECT INTO e.id`, `["8", "7", "6"]`},
		{`FROM e IN events ORDER BY e.time DESC TOP 2 PROJECT INTO e.id`, `["10", "9"]`},
		{`FROM e IN events ORDER BY e.data.price PROJECT INTO e.id`, `["3", "4", "5", "6", "7", "8", "9", "10", "2", "0", "1"]`},
		{`FROM e IN events ORDER BY e.data.price DESC PROJECT INTO e.id`, `["1", "0", "2", "3", "4", "5", "6", "7", "8", "9", "10"]`},
		{`FROM e IN events ORDER BY IF(e.id == "0", 1, "x") PROJECT INTO e.id`, `runtime: 1:18: cannot order by`},
		{`FROM e IN events ORDER BY e.data.tags PROJECT INTO e.id`, `runtime: 1:18: cannot order by ARRAY`},
		{`FROM e IN events ORDER BY e.data.reader.age AS FLOAT64 DESC PROJECT INTO e.id`, `["5", "10", "6", "8", "0", "1", "2", "3", "4", "7", "9"]`},
		{`FROM e IN events WHERE e.subject == "/books/23" PROJECT INTO null`, `[null, null]`},
		{`FROM e IN events PROJECT INTO DISTINCT e.data.price`, `[18.5, 25, 12, null]`},
		{`FROM e IN events PROJECT INTO DISTINCT IF(e.id == "1", 25.0, e.data.price)`, `[18.5, 25, 12, null]`},
		{`FROM e IN events PROJECT INTO DISTINCT e.data.reader`, `[null, {"age": 34, "name": "Alice"}, {"age": 27, "name": "Bob"}]`},
		{`FROM e IN events PROJECT INTO DISTINCT { a: e.data.readerId, b: 1 } == { b: 1, a: "r1" }`, `[false, true]`},
		{`FROM e IN events WHERE e.id == "2" PROJECT INTO [e.data.title, e.data.title == "Emma"]`, `[["Emma", true]]`},
	})
}

func TestEventOutput(t *testing.T) {
	db := libraryDB(t)
	for _, query := range []string{
		`FROM e IN events WHERE e.id == "5" PROJECT INTO e`,
		`FROM x IN (FROM e IN events WHERE e.id == "5" PROJECT INTO e) PROJECT INTO x`,
	} {
		p, err := eventql.Compile(query)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		if _, err := p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1 << 20}, func(v eventql.Value) error {
			got = v.AppendJSON(nil)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := db.Emit(nil, db.Records[5]); string(got) != string(want) {
			t.Errorf("%s\n got %s\nwant %s", query, got, want)
		}
	}
	checkCases(t, db, []specCase{
		{`FROM e IN events WHERE e.id == "5" PROJECT INTO [e] == [e]`, `[true]`},
		{`FROM a IN events FROM b IN events WHERE a.id == "5" AND b.id == "5" PROJECT INTO a == b`, `[true]`},
		{`FROM a IN events FROM b IN events WHERE a.id == "5" AND b.id == "6" PROJECT INTO a == b`, `[false]`},
		{`FROM e IN events WHERE e.id == "5" PROJECT INTO {ev: e}.ev.data.readerId`, `["r1"]`},
		{`FROM e IN events WHERE e.id == "1" PROJECT INTO [e.time AS STRING == e.time AS STRING, e.hash == e.hash, LEN(e.predecessorhash)]`, `[[true, true, 64]]`},
		{`FROM e IN events WHERE e.id == "1" PROJECT INTO [e.hash, e.time]`, mustJSON(t, []any{[]any{db.Records[1].Hash(), "2025-01-01T00:00:01.000000001Z"}})},
		{`FROM e IN events WHERE e.id == "2" PROJECT INTO e.predecessorhash`, mustJSON(t, []any{db.Records[1].Hash()})},
	})
	// Data that holds the text of the hash member does not confuse the parse.
	tricky, err := eventqltest.NewMemDB([]eventqltest.Candidate{{Source: "https://x.io", Subject: "/a", Type: "x.y.z", Data: []byte(`{"a":",\"hash\":\"x\"","z":[1]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, tricky, []specCase{
		{`FROM e IN events PROJECT INTO [e.data, e.hash]`, mustJSON(t, []any{[]any{map[string]any{"a": `,"hash":"x"`, "z": []any{1}}, tricky.Records[0].Hash()}})},
	})
}
