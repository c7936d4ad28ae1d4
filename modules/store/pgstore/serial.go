package pgstore

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// serialTx runs the statements of one transaction one after the other: a
// snapshot's transaction lives on one connection, which runs one statement
// at a time, while store.Verify reads from several goroutines. A Query holds
// the transaction until its rows are read to the end or closed; a QueryRow
// until it is scanned.
type serialTx struct {
	mu sync.Mutex
	tx pgx.Tx
}

func (s *serialTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	s.mu.Lock()
	rows, err := s.tx.Query(ctx, sql, args...)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return &serialRows{Rows: rows, release: sync.OnceFunc(s.mu.Unlock)}, nil
}

func (s *serialTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	s.mu.Lock()
	return &serialRow{Row: s.tx.QueryRow(ctx, sql, args...), release: s.mu.Unlock}
}

// serialRows releases the transaction once read to the end or closed.
type serialRows struct {
	pgx.Rows
	release func()
}

func (r *serialRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.release()
	return false
}

func (r *serialRows) Close() {
	r.Rows.Close()
	r.release()
}

// serialRow releases the transaction once scanned.
type serialRow struct {
	pgx.Row
	release func()
}

func (r *serialRow) Scan(dest ...any) error {
	defer r.release()
	return r.Row.Scan(dest...)
}
