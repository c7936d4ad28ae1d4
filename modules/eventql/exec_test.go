package eventql_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// loaded runs query and returns how many events it read from the database.
func loaded(t *testing.T, db eventql.Database, query string) int64 {
	t.Helper()
	p, err := eventql.Compile(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	stats, err := p.Run(t.Context(), db, eventql.Options{}, func(eventql.Value) error { return nil })
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return stats.EventsLoaded
}

func TestIndexUse(t *testing.T) {
	db := libraryDB(t)
	const p = "io.eventsourcingdb.library."
	for query, want := range map[string]int64{
		`FROM e IN events PROJECT INTO e.id`:                                                                                      11,
		`FROM e IN events WHERE e.type == "` + p + `reader-registered" PROJECT INTO e.id`:                                         2,
		`FROM e IN events WHERE "` + p + `reader-registered" == e.type PROJECT INTO e.id`:                                         2,
		`FROM e IN events WHERE STARTSWITH(e.subject, "/books/4") PROJECT INTO e.id`:                                              4,
		`FROM e IN events WHERE e.subject == "/books/42" PROJECT INTO e.id`:                                                       4,
		`FROM e IN events WHERE e.subject == "/books/42" AND e.type == "` + p + `book-borrowed" PROJECT INTO e.id`:                2,
		`FROM e IN events WHERE e.type == "` + p + `book-borrowed" AND e.data.readerId == "r2" PROJECT INTO COUNT()`:              4,
		`FROM e IN events WHERE ["` + p + `book-returned", "` + p + `reader-registered"] CONTAINS e.type PROJECT INTO e.id`:       3,
		`FROM e IN events WHERE e.type == "" PROJECT INTO e.id`:                                                                   0,
		`FROM e IN events WHERE e.subject == "" OR e.subject == "/books/7" PROJECT INTO e.id`:                                     2,
		`FROM e IN events WHERE ["", "/books/7"] CONTAINS e.subject PROJECT INTO e.id`:                                            2,
		`FROM e IN events WHERE STARTSWITH(e.subject, "") PROJECT INTO e.id`:                                                      11,
		`FROM e IN events WHERE STARTSWITH(e.subject, "/readers/") PROJECT INTO e.id`:                                             2,
		`FROM e IN events WHERE [] CONTAINS e.type PROJECT INTO e.id`:                                                             0,
		`FROM e IN events WHERE e.subject == "/books/7" OR e.subject == "/readers/r1" PROJECT INTO e.id`:                          3,
		`FROM e IN events WHERE e.subject == "/books/7" OR e.type == "` + p + `book-returned" PROJECT INTO e.id`:                  3,
		`FROM e IN events WHERE e.id AS INT >= 9 PROJECT INTO e.id`:                                                               2,
		`FROM e IN events WHERE 3 > e.id AS INT PROJECT INTO e.id`:                                                                3,
		`FROM e IN events WHERE e.id AS INT == 4 PROJECT INTO e.id`:                                                               1,
		`FROM e IN events WHERE e.id AS INT > 5 AND e.type == "` + p + `book-borrowed" PROJECT INTO e.id`:                         3,
		`FROM e IN events WHERE e.id AS INT < 0 PROJECT INTO e.id`:                                                                0,
		`FROM e IN events WHERE e.id AS INT > -1 PROJECT INTO e.id`:                                                               11,
		`FROM e IN events WHERE (e.id AS INT + 1) > 9 PROJECT INTO e.id`:                                                          2,
		`FROM e IN events WHERE e.id AS INT - 2 >= 7 PROJECT INTO e.id`:                                                           2,
		`FROM e IN events WHERE 3 > e.id AS INT + 1 PROJECT INTO e.id`:                                                            2,
		`FROM e IN events WHERE e.id AS INT + -1 == 3 PROJECT INTO e.id`:                                                          1,
		`FROM e IN events WHERE e.id AS INT + 4611686018427387904 > 4611686018427387913 PROJECT INTO e.id`:                        1,
		`FROM e IN events WHERE ["` + p + `book-returned"] CONTAINS e.type AND (e.id AS INT + 1) > 7 PROJECT INTO COUNT() == 0`:   1,
		`FROM e IN events TOP 3 PROJECT INTO e.id`:                                                                                3,
		`FROM e IN events SKIP 2 TOP 3 PROJECT INTO e.id`:                                                                         5,
		`FROM e IN events WHERE e.type == "` + p + `book-acquired" TOP 1 PROJECT INTO e.id`:                                       1,
		`FROM a IN events FROM b IN events WHERE a.type == "` + p + `book-returned" AND b.subject == a.subject PROJECT INTO b.id`: 1 + 11,
		`FROM a IN events FROM b IN events WHERE a.subject == "/readers/r1" AND b.subject == "/readers/r2" PROJECT INTO b.id`:     2,
		`FROM x IN (FROM e IN events WHERE e.type == "` + p + `book-returned" PROJECT INTO e) PROJECT INTO x`:                     1,
		`FROM e IN events ORDER BY e.time DESC TOP 3 PROJECT INTO e.id`:                                                           3,
		`FROM e IN events ORDER BY e.id AS INT DESC SKIP 1 TOP 2 PROJECT INTO e.id`:                                               3,
		`FROM e IN events ORDER BY e.time TOP 1 PROJECT INTO e.id`:                                                                1,
		`FROM e IN events WHERE e.subject == "/books/42" ORDER BY e.time DESC TOP 1 PROJECT INTO e.id`:                            1,
		// Not index forms: the planner must scan.
		`FROM e IN events WHERE e.type == "` + p + `book-returned" OR e.data.x == 1 PROJECT INTO e.id`: 11,
		`FROM e IN events WHERE NOT e.type == "` + p + `book-returned" PROJECT INTO e.id`:              11,
		`FROM e IN events WHERE e.type == e.type PROJECT INTO e.id`:                                    11,
		// Beyond INT, or k beyond 2^62: left to the evaluation.
		`FROM e IN events WHERE e.id AS INT - 4 > 9223372036854775805 PROJECT INTO e.id`: 11,
		`FROM e IN events WHERE e.id AS INT + 4611686018427387905 < 0 PROJECT INTO e.id`: 11,
		`FROM e IN events WHERE e.id AS INT + 1 + 1 > 9 PROJECT INTO e.id`:               11,
	} {
		if got := loaded(t, db, query); got != want {
			t.Errorf("%s\nloaded %d events, want %d", query, got, want)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	db := libraryDB(t)
	for _, query := range []string{
		`FROM e IN events ORDER BY e.id PROJECT INTO e.id`,
		`FROM e IN events GROUP BY e.id PROJECT INTO COUNT()`,
		`FROM a IN events FROM b IN events PROJECT INTO MEDIAN(1)`,
		`FROM e IN events PROJECT INTO DISTINCT e`,
		`FROM x IN (FROM e IN events PROJECT INTO e) PROJECT INTO 1`,
		`FROM a IN subjects FROM b IN eventtypes FROM c IN subjects PROJECT INTO 1`,
	} {
		p, err := eventql.Compile(query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1024}, func(eventql.Value) error { return nil })
		var qe *eventql.Error
		if !errors.As(err, &qe) || qe.Static || qe.Error() != "memory limit of 1024 bytes exceeded" {
			t.Errorf("%s: error %v, want the memory limit", query, err)
		}
		if _, err := p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1 << 20}, func(eventql.Value) error { return nil }); err != nil {
			t.Errorf("%s with 1 MiB: %v", query, err)
		}
	}
	// Streaming steps are not limited.
	p, _ := eventql.Compile(`FROM e IN events WHERE e.data.title != null PROJECT INTO e`)
	if _, err := p.Run(t.Context(), db, eventql.Options{MemoryLimit: 1024}, func(eventql.Value) error { return nil }); err != nil {
		t.Errorf("streaming query: %v", err)
	}
}

func TestHolds(t *testing.T) {
	db := libraryDB(t)
	const p = "io.eventsourcingdb.library."
	for query, want := range map[string]string{
		`FROM e IN events WHERE e.subject == "/books/42" PROJECT INTO COUNT() == 4`:                                                      "holds",
		`FROM e IN events WHERE e.subject == "/books/42" PROJECT INTO COUNT() == 0`:                                                      "fails",
		`FROM e IN events WHERE e.subject == "/books/1" PROJECT INTO COUNT() == 0`:                                                       "holds",
		`FROM e IN events WHERE e.type == "` + p + `book-borrowed" AND e.data.readerId == "r2" PROJECT INTO COUNT() < 3`:                 "holds",
		`FROM e IN events WHERE ["` + p + `book-returned", "` + p + `x"] CONTAINS e.type AND e.id AS INT > 41 PROJECT INTO COUNT() == 0`: "holds",
		`FROM e IN events PROJECT INTO UNIQUE(e.data.missing) == 1`:                                                                      "fails", // null
		`FROM e IN events WHERE e.id == "1" PROJECT INTO true`:                                                                           "holds",
		`FROM e IN events WHERE e.id == "x" PROJECT INTO true`:                                                                           "fails", // no row
		`FROM e IN events PROJECT INTO true`:                                                                                             "fails", // several rows
		`FROM e IN events PROJECT INTO COUNT()`:                                                                                          "query must yield a BOOLEAN, got INT",
		`FROM e IN events WHERE e.id == "1" PROJECT INTO e`:                                                                              "query must yield a BOOLEAN, got RECORD",
		`FROM e IN events WHERE e.id == "1" PROJECT INTO e.data.title`:                                                                   "query must yield a BOOLEAN, got STRING",
		`FROM e IN events WHERE e.id == "1" PROJECT INTO 1 / 0 == 1`:                                                                     "query failed: 1:51: division by zero",
		`FROM e IN events WHERE e.id == "1" PROJECT INTO [1] CONTAINS e.data.title`:                                                      "fails",
		`FROM e IN events ORDER BY e.id PROJECT INTO COUNT() > 0 AND e.id == "x"`:                                                        "static",
	} {
		prog, err := eventql.Compile(query)
		if err != nil {
			if want != "static" {
				t.Errorf("%s: %v", query, err)
			}
			continue
		}
		holds, err := prog.Holds(t.Context(), db, eventql.Options{MemoryLimit: 1 << 20})
		got := map[bool]string{true: "holds", false: "fails"}[holds]
		var inv *eventql.InvalidError
		if errors.As(err, &inv) {
			got = err.Error()
		} else if err != nil {
			got = "unexpected " + err.Error()
		}
		if !strings.HasPrefix(got, strings.TrimSuffix(want, "…")) || (want == "holds") != holds {
			t.Errorf("%s\n got %s\nwant %s", query, got, want)
		}
	}
}

func TestHoldsStopsAtSecondRow(t *testing.T) {
	db := libraryDB(t)
	prog, err := eventql.Compile(`FROM e IN events PROJECT INTO true`)
	if err != nil {
		t.Fatal(err)
	}
	before := db.Loaded
	if holds, err := prog.Holds(t.Context(), db, eventql.Options{}); holds || err != nil {
		t.Fatalf("holds %v, error %v", holds, err)
	}
	if n := db.Loaded - before; n != 2 {
		t.Fatalf("read %d events, want 2", n)
	}
}

// slowDB delays every event, to exercise time limits and cancellation.
type slowDB struct {
	*eventqltest.MemDB
	delay time.Duration
}

func (db slowDB) Events(ctx context.Context, sel eventql.Selection, fn func(r event.Record) bool) error {
	return db.MemDB.Events(ctx, sel, func(r event.Record) bool {
		time.Sleep(db.delay)
		return fn(r)
	})
}

// failingDB fails every read of events with err.
type failingDB struct {
	*eventqltest.MemDB
	err error
}

func (db failingDB) Events(context.Context, eventql.Selection, func(event.Record) bool) error {
	return db.err
}

// TestDatabaseFailureKeepsItsTextOutOfTheMessage: a failed read of the
// database ends a query and a precondition with a message that says only
// that reading failed; the failure itself, which may name files or hosts,
// stays reachable through the error chain for the log.
func TestDatabaseFailureKeepsItsTextOutOfTheMessage(t *testing.T) {
	cause := errors.New("open /var/lib/eventstore/000042.sst: input/output error")
	db := failingDB{MemDB: libraryDB(t), err: cause}
	prog, err := eventql.Compile(`FROM e IN events PROJECT INTO true`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.Run(t.Context(), db, eventql.Options{}, func(eventql.Value) error { return nil })
	var qe *eventql.Error
	if !errors.As(err, &qe) || qe.Error() != "internal error: storage read failed" || qe.Err != cause {
		t.Fatalf("Run: %v, want the internal error caused by %v", err, cause)
	}
	_, err = prog.Holds(t.Context(), db, eventql.Options{})
	var inv *eventql.InvalidError
	if !errors.As(err, &inv) || err.Error() != "query failed: internal error: storage read failed" || !errors.Is(err, cause) {
		t.Fatalf("Holds: %v, want the invalid precondition caused by %v", err, cause)
	}
}

func TestTimeLimit(t *testing.T) {
	db := slowDB{MemDB: libraryDB(t), delay: 5 * time.Millisecond}
	prog, err := eventql.Compile(`FROM a IN events FROM b IN events PROJECT INTO COUNT() == 0`)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = prog.Holds(t.Context(), db, eventql.Options{TimeLimit: 20 * time.Millisecond})
	var inv *eventql.InvalidError
	if !errors.As(err, &inv) || err.Error() != "query failed: time limit of 20ms exceeded" {
		t.Fatalf("error %v, want the time limit", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("stopped after %v", elapsed)
	}
}

func TestCancellation(t *testing.T) {
	db := slowDB{MemDB: libraryDB(t), delay: time.Millisecond}
	prog, err := eventql.Compile(`FROM a IN events FROM b IN events FROM c IN events PROJECT INTO 1`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	rows := 0
	_, err = prog.Run(ctx, db, eventql.Options{}, func(eventql.Value) error {
		rows++
		if rows == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if rows > 20 {
		t.Fatalf("%d rows after cancellation", rows)
	}
}

func TestNowOption(t *testing.T) {
	at := time.Date(2030, 5, 6, 7, 8, 9, 500, time.FixedZone("x", 3600))
	prog, err := eventql.Compile(`FROM x IN (FROM e IN events TOP 1 PROJECT INTO NOW()) FROM e IN events TOP 1 PROJECT INTO [x, NOW() AS STRING]`)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if _, err := prog.Run(t.Context(), libraryDB(t), eventql.Options{Now: at}, func(v eventql.Value) error {
		got = string(v.AppendJSON(nil))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := `["2030-05-06T06:08:09.0000005Z","2030-05-06T06:08:09.0000005Z"]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestEmitErrorStopsRun(t *testing.T) {
	prog, err := eventql.Compile(`FROM e IN events PROJECT INTO e.id`)
	if err != nil {
		t.Fatal(err)
	}
	boom := fmt.Errorf("client gone")
	rows := 0
	_, err = prog.Run(t.Context(), libraryDB(t), eventql.Options{}, func(eventql.Value) error {
		rows++
		return boom
	})
	if !errors.Is(err, boom) || rows != 1 {
		t.Fatalf("error %v after %d rows", err, rows)
	}
}

// TestOrderByWithLimits checks that ORDER BY with SKIP and TOP (kept in a
// bounded heap, or read in id order) gives exactly the slice of the full
// stable sort.
func TestOrderByWithLimits(t *testing.T) {
	db := libraryDB(t)
	keys := []string{"e.data.price", "e.subject", "e.type", "e.data.reader.age", "e.time", "e.id AS INT", "e.id",
		"IF(e.id AS INT < 5, null, e.data.title)", "e.data.age * 0"}
	for _, key := range keys {
		for _, dir := range []string{"ASC", "DESC"} {
			full, err := run(db, "FROM e IN events ORDER BY "+key+" "+dir+" PROJECT INTO e.id")
			if err != nil {
				t.Fatal(err)
			}
			for skip := 0; skip <= 12; skip += 3 {
				for top := 0; top <= 12; top += 2 {
					q := fmt.Sprintf("FROM e IN events ORDER BY %s %s SKIP %d TOP %d PROJECT INTO e.id", key, dir, skip, top)
					got, err := run(db, q)
					if err != nil {
						t.Fatal(err)
					}
					want := full[min(skip, len(full)):min(skip+top, len(full))]
					if mustJSON(t, got) != mustJSON(t, want) && !(len(got) == 0 && len(want) == 0) {
						t.Errorf("%s\n got %s\nwant %s", q, mustJSON(t, got), mustJSON(t, want))
					}
				}
			}
		}
	}
	checkCases(t, db, []specCase{
		{`FROM a IN events FROM s IN subjects ORDER BY a.time DESC TOP 3 PROJECT INTO [a.id, s.subject]`, `[["10", "/"], ["10", "/books"], ["10", "/books/23"]]`},
		{`FROM e IN events ORDER BY IF(e.id == "9", "x", 1) TOP 1 PROJECT INTO e.id`, `runtime: 1:18: cannot order by values of different kinds`},
		{`FROM e IN events ORDER BY e.time DESC GROUP BY e.subject TOP 2 PROJECT INTO UNIQUE(e.subject)`, `["/books/7", "/books/99"]`},
	})
	// Only the best rows are kept: a TOP fits a budget the whole input exceeds.
	p, _ := eventql.Compile(`FROM a IN events FROM b IN events ORDER BY a.data.price DESC TOP 2 PROJECT INTO [a.id, b.id]`)
	if _, err := p.Run(t.Context(), db, eventql.Options{MemoryLimit: 8 << 10}, func(eventql.Value) error { return nil }); err != nil {
		t.Errorf("ORDER BY with TOP 2: %v", err)
	}
	p, _ = eventql.Compile(`FROM a IN events FROM b IN events ORDER BY a.data.price DESC PROJECT INTO [a.id, b.id]`)
	if _, err := p.Run(t.Context(), db, eventql.Options{MemoryLimit: 8 << 10}, func(eventql.Value) error { return nil }); err == nil {
		t.Error("ORDER BY of 121 events kept within 8 KiB")
	}
}

// TestRandom draws a number in [0, 1) for each row, from a generator
// that a run makes at its first RAND(): the eleven rows are not all the
// same.
func TestRandom(t *testing.T) {
	p, err := eventql.Compile(`FROM e IN events PROJECT INTO RAND()`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	if _, err := p.Run(t.Context(), libraryDB(t), eventql.Options{}, func(v eventql.Value) error {
		f, err := strconv.ParseFloat(string(v.AppendJSON(nil)), 64)
		if v.Kind() != eventql.KindFloat || err != nil || f < 0 || f >= 1 {
			return fmt.Errorf("RAND() yielded %s", v.AppendJSON(nil))
		}
		seen[f] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("RAND() yielded %d distinct numbers in 11 rows", len(seen))
	}
}
