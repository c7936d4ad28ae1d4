package eventql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// outcome runs query on db, by a full scan or through the indexes: its
// rows as JSON, its error, and the events it loaded.
func outcome(t *testing.T, db *eventqltest.MemDB, query string, scan bool) (string, string, int) {
	t.Helper()
	p, err := eventql.Compile(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	db.Loaded = 0
	run := p.Run
	if scan {
		run = p.RunScanning
	}
	var rows []string
	_, err = run(context.Background(), db, eventql.Options{MemoryLimit: 1 << 24}, func(v eventql.Value) error {
		rows = append(rows, string(v.AppendJSON(nil)))
		return nil
	})
	failure := ""
	if err != nil {
		failure = err.Error()
	}
	return strings.Join(rows, ","), failure, db.Loaded
}

// randomValue is a member of event data of any kind, or none ("").
func randomValue(r *rand.Rand) string {
	values := []string{`"x"`, `"y"`, `"42"`, `42`, `42.0`, `7`, `-1`, `true`, `false`, `null`, `["x","y"]`, `[42]`, `[]`, `{"k":1}`, ``}
	return values[r.IntN(len(values))]
}

// randomEvents are n events of three types whose data holds values of
// every kind at /a, /tags and /b/c, and a number at /n.
func randomEvents(r *rand.Rand, n int) []eventqltest.Candidate {
	var out []eventqltest.Candidate
	for i := range n {
		b := randomValue(r)
		if b != "" {
			b = `{"c":` + b + `}`
		}
		var members []string
		for _, m := range []struct{ name, value string }{
			{"a", randomValue(r)},
			{"tags", []string{`["t1"]`, `["t1","t2"]`, `["t2","x"]`, `[]`, `"t1"`, ``}[r.IntN(6)]},
			{"b", []string{b, `{}`, `7`, ``}[r.IntN(4)]},
			{"n", fmt.Sprint(r.IntN(5))},
		} {
			if m.value != "" {
				members = append(members, fmt.Sprintf(`"%s":%s`, m.name, m.value))
			}
		}
		out = append(out, eventqltest.Candidate{Source: "https://x", Subject: fmt.Sprintf("/s/%d", i%4),
			Type: fmt.Sprintf("io.x.%c", 'a'+rune(r.IntN(3))), Data: json.RawMessage("{" + strings.Join(members, ",") + "}")})
	}
	return out
}

// conjuncts are the WHERE conjuncts of the random queries: index forms of
// every kind, data forms on indexed and other paths, and conjuncts that
// fail on values of the wrong kind.
var conjuncts = []string{
	`e.type == "io.x.a"`, `["io.x.a", "io.x.b"] CONTAINS e.type`, `e.type == "io.x.c"`, `e.subject == "/s/1"`,
	`STARTSWITH(e.subject, "/s/")`, `(e.id AS INT + 1) > 10`, `e.id AS INT <= 40`,
	`e.data.a == "x"`, `e.data.a == 42`, `"y" == e.data.a`, `e.data.a == true`, `e.data.a == -1`, `e.data.a CONTAINS "x"`,
	`["x", 42, false] CONTAINS e.data.a`, `e.data.tags CONTAINS "t1"`, `e.data.tags CONTAINS "x"`, `[] CONTAINS e.data.tags`,
	`e.data.b.c == "x"`, `e.data.b.c == 7`, `e.data.n > 2`, `e.data.a > 3`, `e.data.n + 1 == 3`, `e.data.b.c == 42`,
	`e.data.a == "x" OR e.data.a == 42`, `e.data.tags CONTAINS "t2" OR ["x"] CONTAINS e.data.tags`,
	`e.data.a == "y" OR e.data.n == 1`,
}

// TestDataIndexesAnswerAsAScan runs random queries on random events with
// random data indexes, through the indexes and by a full scan (every
// event, every conjunct evaluated): the rows and the errors are the same,
// and the indexes load no more events than the scan.
func TestDataIndexesAnswerAsAScan(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 2026))
	indexes := []eventql.DataIndex{
		{ID: 1, Path: "/a"}, {ID: 2, Path: "/tags", EventTypes: []string{"io.x.a", "io.x.b"}}, {ID: 3, Path: "/b/c", EventTypes: []string{"io.x.c"}},
		{ID: 4, Path: "/a", EventTypes: []string{"io.x.c"}},
	}
	served := 0
	for round := range 200 {
		events := randomEvents(r, 20+r.IntN(40))
		indexed, err := eventqltest.NewMemDB(events)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range indexes {
			if r.IntN(3) > 0 {
				indexed.Indexes = append(indexed.Indexes, x)
			}
		}
		for q := range 30 {
			var where []string
			for range 1 + r.IntN(3) {
				where = append(where, conjuncts[r.IntN(len(conjuncts))])
			}
			data := func() string { return conjuncts[7+r.IntN(11)] }
			ranges := []string{`(e.id AS INT + 1) > 10`, `e.id AS INT <= 20`}
			switch q % 6 {
			case 0: // a data conjunct before a lookup of a subject, which reads fewer events
				where = []string{data(), `e.subject == "/s/1"`, `e.type == "io.x.c"`}[:2+r.IntN(2)]
			case 1, 2: // data conjuncts before an id range, which may narrow the keys of the first
				where = []string{data(), data(), ranges[r.IntN(2)]}
			case 3: // the same after one that never fails
				where = []string{`["x", 42, false] CONTAINS e.data.a`, data(), ranges[r.IntN(2)]}
			}
			project := []string{"e.id", "COUNT()", "e.data.a"}[r.IntN(3)]
			if q%6 != 4 {
				project = "e.id" // the rows before a failure tell which event failed
			}
			query := "FROM e IN events WHERE " + strings.Join(where, " AND ") + " PROJECT INTO " + project
			rows, failure, all := outcome(t, indexed, query, true)
			indexedRows, indexedFailure, loaded := outcome(t, indexed, query, false)
			if rows != indexedRows || failure != indexedFailure || (failure == "" && loaded > all) {
				t.Fatalf("round %d: %s\nindexes %+v\nscan:    %q %q (%d loaded)\nindexed: %q %q (%d loaded)",
					round, query, indexed.Indexes, rows, failure, all, indexedRows, indexedFailure, loaded)
			}
			if loaded < all {
				served++
			}
		}
	}
	if served < 400 {
		t.Fatalf("the indexes served %d queries of 6,000: the test does not test them", served)
	}
}

// TestDataIndexUse loads only the events a data index lists where it
// serves a conjunct, and scans where it does not cover the level.
func TestDataIndexUse(t *testing.T) {
	var events []eventqltest.Candidate
	for i := range 100 {
		events = append(events, eventqltest.Candidate{Source: "https://x", Subject: fmt.Sprintf("/readers/%d", i%10),
			Type: []string{"io.x.borrowed", "io.x.returned"}[i%2], Data: json.RawMessage(fmt.Sprintf(`{"reader":"/readers/%d","tags":["r%d","all"],"n":%d}`, i%10, i%10, i))})
	}
	db, err := eventqltest.NewMemDB(events)
	if err != nil {
		t.Fatal(err)
	}
	db.Indexes = []eventql.DataIndex{{ID: 1, Path: "/reader"}, {ID: 2, Path: "/tags", EventTypes: []string{"io.x.borrowed"}}}
	for query, want := range map[string]int{
		`FROM e IN events WHERE e.type == "io.x.borrowed" AND e.data.reader == "/readers/2" PROJECT INTO COUNT() < 3`:              10,
		`FROM e IN events WHERE e.data.reader == "/readers/2" AND (e.id AS INT + 1) > 50 PROJECT INTO e.id`:                        5,
		`FROM e IN events WHERE e.type == "io.x.borrowed" AND e.data.tags CONTAINS "r4" PROJECT INTO e.id`:                         10,
		`FROM e IN events WHERE ["io.x.borrowed"] CONTAINS e.type AND e.data.tags CONTAINS "r4" PROJECT INTO e.id`:                 10,
		`FROM e IN events WHERE e.data.tags CONTAINS "r4" PROJECT INTO e.id`:                                                       100, // the index covers one type
		`FROM e IN events WHERE e.type == "io.x.returned" AND e.data.tags CONTAINS "r5" PROJECT INTO e.id`:                         50,  // nor this one
		`FROM e IN events WHERE ["/readers/1", "/readers/3"] CONTAINS e.data.reader PROJECT INTO e.id`:                             20,
		`FROM e IN events WHERE e.data.reader == "/readers/1" OR e.data.reader == "/readers/3" PROJECT INTO e.id`:                  20,
		`FROM e IN events WHERE e.data.reader == "/readers/1" OR e.data.n == 3 PROJECT INTO e.id`:                                  100, // two paths
		`FROM e IN events WHERE e.subject == "/readers/1" AND e.data.reader == "/readers/1" PROJECT INTO e.id`:                     10,
		`FROM e IN events WHERE e.data.n == 9007199254740993 AND e.data.reader == "/readers/1" PROJECT INTO e.id`:                  10,
		`FROM e IN events WHERE e.data.reader == "/readers/1" AND e.data.n == 9007199254740993 PROJECT INTO e.id`:                  10,
		`FROM e IN events WHERE e.data.n > 3 AND e.data.reader == "/readers/1" PROJECT INTO e.id`:                                  10,
		`FROM e IN events WHERE e.type == "io.x.borrowed" AND e.data.reader == "/readers/2" AND e.id AS INT < 0 PROJECT INTO e.id`: 0,
	} {
		if got := loaded(t, db, query); int(got) != want {
			t.Errorf("%s\nloaded %d events, want %d", query, got, want)
		}
	}
	if got := dataindex.Path([]string{"reader"}); got != "/reader" {
		t.Fatal(got)
	}
}
