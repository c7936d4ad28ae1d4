package storedb_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/storedb"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// plainDB is the store's database without its data indexes.
type plainDB struct{ *storedb.DB }

func (plainDB) DataIndexes() []eventql.DataIndex { return nil }

// runOn runs q on db: its rows as JSON and the events it loaded.
func runOn(t *testing.T, db eventql.Database, q string) (string, int64) {
	t.Helper()
	p, err := eventql.Compile(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var rows []string
	stats, err := p.Run(context.Background(), db, eventql.Options{MemoryLimit: 1 << 24}, func(v eventql.Value) error {
		rows = append(rows, string(v.AppendJSON(nil)))
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(rows, ","), stats.EventsLoaded
}

// waitReady waits until every data index of s is ready.
func waitReady(t testing.TB, s *store.Store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all, _, err := s.DataIndexes()
		if err != nil {
			t.Fatal(err)
		}
		ready := true
		for _, x := range all {
			ready = ready && x.Ready()
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the data indexes are not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStoredDataIndexesAnswerAsAScan writes events of well-typed data to a
// store, part of them before its data indexes were registered (built in
// the background) and part after (keyed as written), and runs random
// queries with the indexes and without: the same rows, and never more
// events loaded with them, on Pebble and on PostgreSQL. The last 300
// events are keyed in the store's window too, which serves the reads of
// them alone.
func TestStoredDataIndexesAnswerAsAScan(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := storetest.Start(t, b.New(t))
		r := rand.New(rand.NewPCG(45, 11))
		write := func(n int) {
			var batch []event.Candidate
			for range n {
				tags := fmt.Sprintf(`["c%d","s%d"]`, r.IntN(20), r.IntN(5))
				data := fmt.Sprintf(`{"reader":"/readers/%d","tags":%s,"n":%d,"ok":%t}`, r.IntN(30), tags, r.IntN(50), r.IntN(2) == 0)
				batch = append(batch, storetest.Candidate(fmt.Sprintf("/readers/%d", r.IntN(30)), fmt.Sprintf("io.x.%c", 'a'+rune(r.IntN(3))), data))
			}
			storetest.Write(t, s, batch...)
		}
		write(3_000)
		for _, d := range []dataindex.Definition{
			{Name: "reader", Path: "/reader"}, {Name: "tags", Path: "/tags", EventTypes: []string{"io.x.a", "io.x.b"}},
			{Name: "n", Path: "/n"}, {Name: "ok", Path: "/ok", EventTypes: []string{"io.x.c"}},
		} {
			if _, err := s.RegisterDataIndex(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		write(1_000)
		waitReady(t, s)
		write(500)
		conjuncts := []string{
			`e.type == "io.x.a"`, `["io.x.a", "io.x.b"] CONTAINS e.type`, `e.type == "io.x.c"`, `(e.id AS INT + 1) > 2500`,
			`e.id AS INT <= 4100`, `e.data.reader == "/readers/7"`, `e.data.tags CONTAINS "c3"`, `["s1", "s2"] CONTAINS e.data.tags`,
			`e.data.n == 17`, `[1, 2, 3] CONTAINS e.data.n`, `e.data.ok == true`, `e.data.n > 25`, `e.subject == "/readers/4"`,
		}
		served := 0
		for i := range 150 + 2*len(conjuncts) {
			var where []string
			if i < 150 {
				for range 1 + r.IntN(3) {
					where = append(where, conjuncts[r.IntN(len(conjuncts))])
				}
			} else { // the last 300 events, which the window holds keyed
				where = []string{conjuncts[(i-150)/2], `(e.id AS INT + 1) > 4200`}
				if i%2 == 1 {
					slices.Reverse(where)
				}
			}
			q := "FROM e IN events WHERE " + strings.Join(where, " AND ") + " PROJECT INTO e.id"
			db := storedb.New(s.View(), emitter)
			want, all := runOn(t, plainDB{db}, q)
			got, loaded := runOn(t, db, q)
			if got != want || loaded > all {
				t.Fatalf("%s\nwith the indexes %d loaded: %.200s\nwithout         %d loaded: %.200s", q, loaded, got, all, want)
			}
			if loaded < all {
				served++
			}
		}
		if served < 40 {
			t.Fatalf("the indexes served %d queries of %d", served, 150+2*len(conjuncts))
		}
	})
}

// TestRemovedDataIndexFailsItsReaders removes a data index between the
// start of a run, which planned with it, and its read: the run fails
// rather than answer without the keys that went with it.
func TestRemovedDataIndexFailsItsReaders(t *testing.T) {
	ctx := context.Background()
	s := storetest.Start(t, storetest.Pebble.New(t))
	storetest.Write(t, s, storetest.Candidate("/a", "io.x.a", `{"k":"v"}`))
	if _, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "k", Path: "/k"}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s)
	db := storedb.New(s.View(), emitter)
	indexes := db.DataIndexes()
	if len(indexes) != 1 {
		t.Fatalf("indexes %+v", indexes)
	}
	if err := s.RemoveDataIndex(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	sel := eventql.Selection{DataIndex: indexes[0].ID, DataKeys: []dataindex.Lookup{{Key: dataindex.String("v"), To: ^uint64(0)}}, To: ^uint64(0)}
	err := db.Events(ctx, sel, func(event.Record) bool { return true })
	if !errors.Is(err, storedb.ErrDataIndexRemoved) {
		t.Fatalf("a read of the removed index: %v", err)
	}
}
