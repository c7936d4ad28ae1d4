package pgstore

import (
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventstore-service/eventstore/modules/event"
)

// Reads go page by page, each page one statement whose rows are read
// completely before the statement's connection returns to the pool: a
// reader that waits for a slow client holds no connection, and no open
// statement pins old row versions. A page starts after the last key of the
// one before, so memory stays flat: one page, at most about pageBytes of
// records (pages grow from firstPageRows to maxPageRows rows while the
// records are small), whatever the size of the result.
const (
	firstPageRows = 16
	maxPageRows   = 4096
	pageBytes     = 2 << 20
)

// recordPages iterates the rows (id, bytes) of a statement of scanSQL,
// page by page, in id order.
type recordPages struct {
	live       *liveness
	q          querier
	sql        string
	args       []any
	lo, hi     int64 // the ids still to read
	descending bool
	limit      int
	done       bool
	err        error

	records []event.Record // the page; their JSON lies in buf
	ends    []int
	buf     []byte
	pos     int
}

func newRecordPages(live *liveness, q querier, sql string, args []any, from, to uint64, descending bool) *recordPages {
	return &recordPages{
		live: live, q: q, sql: sql, args: args,
		lo: toInt64(from), hi: toInt64(to), descending: descending,
		limit: firstPageRows, done: from > to, pos: -1,
	}
}

func (p *recordPages) Next() bool {
	p.pos++
	for p.pos >= len(p.records) {
		if p.done || p.err != nil {
			return false
		}
		p.fetch()
		p.pos = 0
	}
	return true
}

func (p *recordPages) Record() event.Record { return p.records[p.pos] }

func (p *recordPages) Close() error {
	p.done, p.records = true, nil
	return p.err
}

// fetch reads the next page.
func (p *recordPages) fetch() {
	p.records, p.ends, p.buf = p.records[:0], p.ends[:0], p.buf[:0]
	ctx, cancel := p.live.timeout()
	defer cancel()
	rows, err := p.q.Query(ctx, p.sql, append([]any{p.lo, p.hi, p.limit}, p.args...)...)
	if err != nil {
		p.err = wrap(err, "read events")
		return
	}
	var (
		id   int64
		raw  pgtype.DriverBytes
		n    int // rows, selected or not
		full bool
	)
	for rows.Next() {
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			p.err = wrap(err, "read events")
			return
		}
		n++
		if raw == nil {
			continue // read, not selected (scanSQL)
		}
		p.buf = append(p.buf, raw...)
		p.ends = append(p.ends, len(p.buf))
		p.records = append(p.records, event.Record{ID: uint64(id)})
		if full = len(p.buf) >= pageBytes; full {
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		p.err = wrap(err, "read events")
		return
	}
	start := 0
	for i := range p.records {
		p.records[i].JSON = p.buf[start:p.ends[i]:p.ends[i]]
		start = p.ends[i]
	}
	switch {
	case n < p.limit && !full:
		p.done = true
	case p.descending:
		p.hi = id - 1
	default:
		p.lo = id + 1
	}
	p.done = p.done || p.lo > p.hi
	p.limit = min(4*p.limit, maxPageRows, max(firstPageRows, pageBytes*n/max(len(p.buf), 1)))
}

// stringPages iterates the values of a statement that selects (key, value)
// with key > $1, at most $2 rows, in key order, page by page.
type stringPages struct {
	live    *liveness
	q       querier
	sql     string
	args    []any
	after   string
	done    bool
	err     error
	values  []string
	pos     int
	current string
}

func newStringPages(live *liveness, q querier, sql string, args ...any) *stringPages {
	return &stringPages{live: live, q: q, sql: sql, args: args, pos: -1}
}

func (p *stringPages) Next() bool {
	p.pos++
	for p.pos >= len(p.values) {
		if p.done || p.err != nil {
			return false
		}
		p.fetch()
		p.pos = 0
	}
	p.current = p.values[p.pos]
	return true
}

func (p *stringPages) Value() string { return p.current }

func (p *stringPages) Close() error {
	p.done, p.values = true, nil
	return p.err
}

const stringPageRows = 1024

func (p *stringPages) fetch() {
	p.values = p.values[:0]
	ctx, cancel := p.live.timeout()
	defer cancel()
	rows, err := p.q.Query(ctx, p.sql, append([]any{p.after, stringPageRows}, p.args...)...)
	if err != nil {
		p.err = wrap(err, "read names")
		return
	}
	var key, value string
	for rows.Next() {
		if err := rows.Scan(&key, &value); err != nil {
			rows.Close()
			p.err = wrap(err, "read names")
			return
		}
		p.values = append(p.values, value)
	}
	if err := rows.Err(); err != nil {
		p.err = wrap(err, "read names")
		return
	}
	p.after = key
	p.done = len(p.values) < stringPageRows
}
