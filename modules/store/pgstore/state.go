package pgstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/store"
)

// State returns the record of key in space.
func (b *Backend) State(space, key string) (store.StateRecord, bool, error) {
	return stateReader{q: b.q, live: b.live}.State(space, key)
}

// States iterates the records of space whose key starts with prefix, a
// page at a time.
func (b *Backend) States(space, prefix string) store.StateIterator {
	return stateReader{q: b.q, live: b.live}.States(space, prefix)
}

// ViewStates calls fn with a reader whose reads all run in one
// repeatable-read, read-only transaction: they see the records as the
// transaction's first statement found them.
func (b *Backend) ViewStates(fn func(r store.StateReader) error) error {
	if b.snapshot != nil { // every read of a snapshot is one moment already
		return fn(b)
	}
	ctx, cancel := b.live.timeout()
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	cancel()
	if err != nil {
		return wrap(err, "begin a view of the state")
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	return fn(stateReader{q: &serialTx{tx: tx}, live: b.live})
}

// stateReader reads feature state through q: the pool, or a transaction.
type stateReader struct {
	q    querier
	live *liveness
}

// State returns the record of key in space.
func (v stateReader) State(space, key string) (store.StateRecord, bool, error) {
	if !storable(space, key) {
		return store.StateRecord{}, false, nil
	}
	ctx, cancel := v.live.timeout()
	defer cancel()
	r := store.StateRecord{Space: space, Key: key}
	var version int64
	err := v.q.QueryRow(ctx, "SELECT value, version FROM eventstore.state WHERE space = $1 AND key = $2", space, key).Scan(&r.Value, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.StateRecord{}, false, nil
	}
	if err != nil {
		return store.StateRecord{}, false, wrap(err, "read state %s/%s", space, key)
	}
	r.Version = uint64(version)
	return r, true, nil
}

// statePageRows is how many records a page of States reads.
const statePageRows = 1024

// States iterates the records of space whose key starts with prefix, a
// page at a time.
func (v stateReader) States(space, prefix string) store.StateIterator {
	p := &statePages{v: v, space: space, after: prefix, pos: -1}
	if !storable(space, prefix) {
		p.done = true
	}
	p.end, p.bounded = prefixEnd(prefix)
	p.first = true
	return p
}

// statePages walks the records of a space in key order, page by page.
type statePages struct {
	v       stateReader
	space   string
	after   string // the last key read, or the prefix before the first page
	end     string // no key at or above it has the prefix, if bounded
	bounded bool
	first   bool
	done    bool
	err     error
	page    []store.StateRecord
	pos     int
}

func (p *statePages) Next() bool {
	p.pos++
	for p.pos >= len(p.page) {
		if p.done || p.err != nil {
			return false
		}
		p.fetch()
		p.pos = 0
	}
	return true
}

func (p *statePages) Record() store.StateRecord { return p.page[p.pos] }

func (p *statePages) Close() error {
	p.done, p.page = true, nil
	return p.err
}

func (p *statePages) fetch() {
	p.page = p.page[:0]
	ctx, cancel := p.v.live.timeout()
	defer cancel()
	op := ">"
	if p.first {
		op = ">=" // the prefix itself is a key
	}
	sql := "SELECT key, value, version FROM eventstore.state WHERE space = $1 AND key " + op + " $2"
	args := []any{p.space, p.after}
	if p.bounded {
		sql += " AND key < $3"
		args = append(args, p.end)
	}
	rows, err := p.v.q.Query(ctx, sql+" ORDER BY key LIMIT "+strconv.Itoa(statePageRows), args...)
	if err != nil {
		p.err = wrap(err, "read state %s", p.space)
		return
	}
	for rows.Next() {
		r := store.StateRecord{Space: p.space}
		var version int64
		if err := rows.Scan(&r.Key, &r.Value, &version); err != nil {
			rows.Close()
			p.err = wrap(err, "read state %s", p.space)
			return
		}
		r.Version = uint64(version)
		p.page = append(p.page, r)
	}
	if err := rows.Err(); err != nil {
		p.err = wrap(err, "read state %s", p.space)
		return
	}
	p.first = false
	if n := len(p.page); n > 0 {
		p.after = p.page[n-1].Key
	}
	p.done = len(p.page) < statePageRows
}

// queueState queues the puts and deletes of feature state of a commit.
func queueState(batch *pgx.Batch, records []store.StateRecord) {
	var spaces, keys, delSpaces, delKeys []string
	var values [][]byte
	var versions []int64
	for _, r := range records {
		if r.Value == nil {
			delSpaces, delKeys = append(delSpaces, r.Space), append(delKeys, r.Key)
			continue
		}
		spaces, keys = append(spaces, r.Space), append(keys, r.Key)
		values, versions = append(values, r.Value), append(versions, int64(r.Version))
	}
	if len(delKeys) > 0 {
		batch.Queue(`DELETE FROM eventstore.state s USING unnest($1::text[], $2::text[]) AS d(space, key)
WHERE s.space = d.space AND s.key = d.key`, delSpaces, delKeys)
	}
	if len(keys) > 0 {
		batch.Queue(`INSERT INTO eventstore.state (space, key, value, version)
SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[])
ON CONFLICT (space, key) DO UPDATE SET value = excluded.value, version = excluded.version`, spaces, keys, values, versions)
	}
}
