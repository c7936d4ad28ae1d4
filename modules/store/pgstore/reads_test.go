package pgstore_test

import (
	"context"
	"math"
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
// eventstore.events than it returns, whatever the plan PostgreSQL picks.
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
	}{
		{store.Scan{Subject: "/small", To: math.MaxUint64}, 16},
		{store.Scan{Subject: "/small", To: math.MaxUint64, Descending: true}, 16},
		{store.Scan{Subject: "/small", From: middle, To: math.MaxUint64}, 4096},
		{store.Scan{Subject: "/big", From: middle, To: math.MaxUint64}, 16},
		{store.Scan{Subject: "/big", From: middle, To: math.MaxUint64}, 4096},
		{store.Scan{Subject: "/big", To: middle, Descending: true}, 4096},
		{store.Scan{Type: "io.example.rare", To: math.MaxUint64}, 16},
		{store.Scan{Type: "io.example.pg", From: middle, To: middle + 2000, Descending: true}, 4096},
		{store.Scan{Subject: "/small", Type: "io.example.rare", To: math.MaxUint64, Descending: true}, 16},
	} {
		rows, loops, err := b.RowsRead(c.scan, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if rows > c.limit+loops/2 {
			t.Errorf("a page of %d of %+v read %d rows of the events in %d loops", c.limit, c.scan, rows, loops)
		}
	}
}
