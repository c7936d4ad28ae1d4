package pgstore

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/store"
)

// startOn opens a backend on the database at url, logging to log, and
// starts a store on it, closed when the test ends.
func startOn(t *testing.T, url string, log *zap.Logger, opts Options) (*Backend, *store.Store) {
	t.Helper()
	ctx := context.Background()
	b, err := Open(ctx, url, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(func() (store.Backend, error) { return b, nil }, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	return b, s
}

// FollowLimit exports followLimit to the external tests.
const FollowLimit = followLimit

// RowsRead returns how many rows of eventstore.events PostgreSQL reads for
// a page of limit rows of s (EXPLAIN ANALYZE of the statement of Scan, in
// a session of b's pool), give or take half a row a loop: EXPLAIN rounds
// the rows of a loop.
func (b *Backend) RowsRead(s store.Scan, limit int) (rows, loops int, err error) {
	sql, args, err := scanSQL("e.record", s)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := b.live.timeout()
	defer cancel()
	var plan []struct{ Plan planNode }
	err = b.q.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, append([]any{toInt64(s.From), toInt64(s.To), limit}, args...)...).Scan(&plan)
	if err != nil || len(plan) != 1 {
		return 0, 0, fmt.Errorf("explain %q: %v (%d plans)", sql, err, len(plan))
	}
	rows, loops = plan[0].Plan.eventsRows()
	return rows, loops, nil
}

// planNode is a node of a plan of EXPLAIN (FORMAT JSON).
type planNode struct {
	Relation string     `json:"Relation Name"`
	Rows     float64    `json:"Actual Rows"`
	Removed  float64    `json:"Rows Removed by Filter"`
	Loops    float64    `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// eventsRows sums the rows that the scans of eventstore.events below n
// read (those they return and those their filters remove) and their loops.
func (n planNode) eventsRows() (rows, loops int) {
	if n.Relation == "events" {
		rows, loops = int((n.Rows+n.Removed)*n.Loops), int(n.Loops)
	}
	for _, c := range n.Plans {
		r, l := c.eventsRows()
		rows, loops = rows+r, loops+l
	}
	return rows, loops
}

// SetPurgeHook sets the function a purge runs once it copied the tables,
// before it swaps them.
func (b *Backend) SetPurgeHook(fn func(phase string)) { b.purgeHook = fn }
