package eventql_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// libraryDB is the conformance data set in memory.
func libraryDB(t testing.TB) *eventqltest.MemDB { return eventqltest.Library(t) }

// run compiles and runs query on db, returning the rows as decoded JSON.
func run(db eventql.Database, query string) ([]any, error) {
	p, err := eventql.Compile(query)
	if err != nil {
		return nil, err
	}
	var rows []any
	_, err = p.Run(context.Background(), db, eventql.Options{MemoryLimit: 1 << 20}, func(v eventql.Value) error {
		var row any
		if err := json.Unmarshal(v.AppendJSON(nil), &row); err != nil {
			return err
		}
		rows = append(rows, row)
		return nil
	})
	return rows, err
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestConformanceCases(t *testing.T) {
	db := libraryDB(t)
	for _, tc := range eventqltest.Load(t).Cases {
		t.Run(tc.ID, func(t *testing.T) {
			rows, err := run(db, tc.Query)
			var qe *eventql.Error
			switch tc.ExpectError {
			case "static":
				if !errors.As(err, &qe) || !qe.Static {
					t.Fatalf("%s\nwant a static error, got rows %v, error %v", tc.Query, rows, err)
				}
				return
			case "runtime":
				if !errors.As(err, &qe) || qe.Static {
					t.Fatalf("%s\nwant a runtime error, got rows %v, error %v", tc.Query, rows, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nerror: %v", tc.Query, err)
			}
			if !eventqltest.SameRows(rows, tc.Expected, tc.Ordered) {
				t.Fatalf("%s\n got %s\nwant %s", tc.Query, mustJSON(t, rows), mustJSON(t, tc.Expected))
			}
		})
	}
}

func TestConformancePreconditions(t *testing.T) {
	db := libraryDB(t)
	for _, tc := range eventqltest.Load(t).PreconditionCases {
		t.Run(tc.ID, func(t *testing.T) {
			status := 200
			p, err := eventql.Compile(tc.Query)
			if err != nil {
				status = 400
			} else {
				holds, err := p.Holds(context.Background(), db, eventql.Options{MemoryLimit: 1 << 20})
				switch {
				case err != nil:
					status = 400
				case !holds:
					status = 409
				}
			}
			if status != tc.ExpectStatus {
				t.Fatalf("%s: status %d, want %d", tc.Query, status, tc.ExpectStatus)
			}
		})
	}
}
