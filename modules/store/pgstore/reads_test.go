package pgstore_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestPagesReadTheirEventsOnly reads pages of subjects and types of a log
// in which they are sparse, or a few long runs, right after writing it
// (PostgreSQL's statistics lag behind): no page reads more rows of
// eventstore.events than it returns, whatever the plan PostgreSQL picks;
// a page of a subject of runs of one event, dense in the log, reads at
// most eight rows for each it returns, and the right ones.
func TestPagesReadTheirEventsOnly(t *testing.T) {
	url := pg.Database(t)
	s := node(t, url)
	big := make([]event.Candidate, 1000)
	for i := range big {
		big[i] = candidate("/big", `{}`)
	}
	rare := candidate("/small", `{}`)
	rare.Type = "io.example.rare"
	for range 30 {
		if _, err := s.Write(context.Background(), big, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(context.Background(), []event.Candidate{rare, candidate("/small", `{}`)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	alternating := make([]event.Candidate, 2000)
	for i := range alternating {
		alternating[i] = candidate([]string{"/alt/a", "/alt/b"}[i%2], `{}`)
	}
	written, err := s.Write(context.Background(), alternating, nil)
	if err != nil {
		t.Fatal(err)
	}
	var alt []uint64 // the ids of /alt/a
	for i, r := range written {
		if i%2 == 0 {
			alt = append(alt, r.ID)
		}
	}
	storetest.Close(t, s)
	b, err := pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const middle = 15 * 1002
	for _, c := range []struct {
		scan  store.Scan
		limit int
		per   int // rows read per row returned, at most
	}{
		{store.Scan{Subject: "/alt/a", From: alt[0], To: math.MaxUint64}, 4096, 8},
		{store.Scan{Subject: "/alt/a", To: math.MaxUint64, Descending: true}, 16, 8},
		{store.Scan{Subject: "/small", To: math.MaxUint64}, 16, 1},
		{store.Scan{Subject: "/small", To: math.MaxUint64, Descending: true}, 16, 1},
		{store.Scan{Subject: "/small", From: middle, To: math.MaxUint64}, 4096, 1},
		{store.Scan{Subject: "/big", From: middle, To: math.MaxUint64}, 16, 1},
		{store.Scan{Subject: "/big", From: middle, To: math.MaxUint64}, 4096, 1},
		{store.Scan{Subject: "/big", To: middle, Descending: true}, 4096, 1},
		{store.Scan{Type: "io.example.rare", To: math.MaxUint64}, 16, 1},
		{store.Scan{Type: "io.example.pg", From: middle, To: middle + 2000, Descending: true}, 4096, 1},
		{store.Scan{Subject: "/small", Type: "io.example.rare", To: math.MaxUint64, Descending: true}, 16, 1},
	} {
		rows, loops, err := b.RowsRead(c.scan, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if rows > c.per*c.limit+loops/2 {
			t.Errorf("a page of %d of %+v read %d rows of the events in %d loops", c.limit, c.scan, rows, loops)
		}
	}
	for _, descending := range []bool{false, true} {
		it := b.Scan(store.Scan{Subject: "/alt/a", To: math.MaxUint64, Descending: descending})
		var got []uint64
		for it.Next() {
			got = append(got, it.Record().ID)
		}
		want := slices.Clone(alt)
		if descending {
			slices.Reverse(want)
		}
		if err := it.Close(); err != nil || !slices.Equal(got, want) {
			t.Fatalf("read /alt/a (descending %v): %d events, %v; want %d", descending, len(got), err, len(want))
		}
	}
}
