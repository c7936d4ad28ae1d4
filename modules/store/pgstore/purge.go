package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// An erasure replaces records in eventstore.events and deletes keys from
// eventstore.data_keys; the old row versions stay in the tables' pages
// (and TOAST and index pages) until their space is reused, which VACUUM
// does not do: it frees the space and leaves the bytes. A purge therefore
// rewrites both tables, as VACUUM FULL would, without holding their locks
// while it copies:
//
//  1. In one repeatable-read snapshot it notes the head (events, commits)
//     and the layout epoch, and copies both tables into new ones.
//  2. It builds their indexes.
//  3. In one short transaction under the head's lock (commits of every node
//     wait, as for one commit group) it copies what was appended since:
//     events from the noted count on, keys of later commits (commit_no);
//     then it locks the old tables (waiting at most lockWait for readers),
//     drops them and gives the new ones their names.
//
// The old files are unlinked with the commit. Anything but appends since
// the copy (another erasure, a data index dropped, a reset) moved the
// layout epoch on: the purge starts over. An erasure commit marks the
// purge pending (purgeKey in meta); the purge clears it in its swap, and a
// node that starts while one is pending (the last was cut off) does it
// first. One purge runs at a time, under an advisory lock.

// purgeKey is the key in meta of the mark of a purge to do.
const purgeKey = "purge"

// epochKey is the key in meta of the layout epoch, which every change of
// the tables other than appends moves on.
const epochKey = "layout_epoch"

// purgeLock is the key of the advisory lock of a purge ("purge").
const purgeLock = 0x7075726765

// lockWait bounds how long a swap waits for a lock; then it tries again.
const lockWait = 200 * time.Millisecond

// errMovedOn reports a layout change since a purge's copy.
var errMovedOn = errors.New("the tables changed since they were copied")

// queueLayoutChange queues the statement that moves the layout epoch on.
func queueLayoutChange(batch *pgx.Batch) {
	batch.Queue("INSERT INTO eventstore.meta VALUES ('" + epochKey + "', '1') ON CONFLICT (key) DO UPDATE SET value = (eventstore.meta.value::bigint + 1)::text")
}

// Purge rewrites the tables that held erased data, if an erasure left a
// purge to do, and returns once their old files are gone.
func (b *Backend) Purge(ctx context.Context) error {
	if b.snapshot != nil {
		return errors.New("a snapshot backend is read-only")
	}
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return wrap(err, "purge: connect")
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", purgeLock); err != nil {
		return wrap(err, "purge: take the lock")
	}
	defer func() {
		if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", purgeLock); err != nil {
			conn.Conn().Close(context.Background()) // closing the session releases the lock
		}
	}()
	defer b.countErased(conn.Conn())
	for {
		var pending bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM eventstore.meta WHERE key = $1)", purgeKey).Scan(&pending); err != nil {
			return wrap(err, "purge: look for a purge to do")
		}
		if !pending {
			return nil
		}
		started := time.Now()
		err := b.rewrite(ctx, conn.Conn())
		if errors.Is(err, errMovedOn) {
			continue
		}
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		b.log.Info("purged the erased data: the tables events and data_keys rewritten", zap.Duration("took", time.Since(started)))
	}
}

// rewrite copies events and data_keys into new tables and puts them in
// the old ones' places (the steps above).
func (b *Backend) rewrite(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS eventstore.events_rewrite, eventstore.data_keys_rewrite"); err != nil {
		return wrap(err, "drop the tables of a purge cut off")
	}
	var epoch string
	var count, commits int64
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		if epoch, err = layoutEpoch(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT event_count, commits FROM eventstore.head").Scan(&count, &commits); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
CREATE TABLE eventstore.events_rewrite (LIKE eventstore.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO eventstore.events_rewrite SELECT * FROM eventstore.events;
CREATE TABLE eventstore.data_keys_rewrite (LIKE eventstore.data_keys INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO eventstore.data_keys_rewrite SELECT * FROM eventstore.data_keys;`)
		return err
	})
	if err != nil {
		return wrap(err, "copy the tables")
	}
	if _, err := conn.Exec(ctx, `
ALTER TABLE eventstore.events_rewrite ADD CONSTRAINT events_rewrite_pkey PRIMARY KEY (id);
ALTER TABLE eventstore.data_keys_rewrite ADD CONSTRAINT data_keys_rewrite_pkey PRIMARY KEY (index_id, key, event_id);
CREATE INDEX data_keys_rewrite_commit_no ON eventstore.data_keys_rewrite USING brin (commit_no);`); err != nil {
		return wrap(err, "index the copies")
	}
	if b.purgeHook != nil {
		b.purgeHook("copied")
	}
	for wait := lockWait; ; wait = min(2*wait, 5*time.Second) {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return swap(ctx, tx, epoch, count, commits) })
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available: readers held a table
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// swap copies what was appended since the copy, and puts the copies in
// the old tables' places.
func swap(ctx context.Context, tx pgx.Tx, epoch string, count, commits int64) error {
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", lockWait.Milliseconds())); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM eventstore.head FOR UPDATE"); err != nil {
		return err
	}
	now, err := layoutEpoch(ctx, tx)
	if err != nil {
		return err
	}
	if now != epoch {
		return errMovedOn
	}
	if _, err := tx.Exec(ctx, "INSERT INTO eventstore.events_rewrite SELECT * FROM eventstore.events WHERE id >= $1", count); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO eventstore.data_keys_rewrite SELECT * FROM eventstore.data_keys WHERE commit_no > $1", commits); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
LOCK TABLE eventstore.events, eventstore.data_keys IN ACCESS EXCLUSIVE MODE;
DROP TABLE eventstore.events, eventstore.data_keys;
ALTER TABLE eventstore.events_rewrite RENAME TO events;
ALTER INDEX eventstore.events_rewrite_pkey RENAME TO events_pkey;
ALTER TABLE eventstore.data_keys_rewrite RENAME TO data_keys;
ALTER INDEX eventstore.data_keys_rewrite_pkey RENAME TO data_keys_pkey;
ALTER INDEX eventstore.data_keys_rewrite_commit_no RENAME TO data_keys_commit_no;
DELETE FROM eventstore.meta WHERE key = '`+purgeKey+`';`)
	return err
}

// layoutEpoch reads the layout epoch ("0" before any change).
func layoutEpoch(ctx context.Context, tx pgx.Tx) (string, error) {
	var epoch string
	err := tx.QueryRow(ctx, "SELECT value FROM eventstore.meta WHERE key = $1", epochKey).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return "0", nil
	}
	return epoch, err
}

// resumedPurge is a purge running in the background since the start.
type resumedPurge struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// resumePurge does in the background the purge that a start finds
// pending, if any: the node serves meanwhile, with the erased records in
// place; an erasure's answer waits for it (Purge takes its lock).
func (b *Backend) resumePurge() *resumedPurge {
	ctx, cancel := context.WithCancel(context.Background())
	r := &resumedPurge{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := b.Purge(ctx); err != nil && ctx.Err() == nil {
			b.log.Error("the purge of erased data left to do failed; the next erasure does it", zap.Error(err))
		}
	}()
	return r
}

// stop ends the purge and waits for it.
func (r *resumedPurge) stop() {
	r.cancel()
	<-r.done
}

// countErased counts the erased events (their kept digests) for
// diagnostics, which ask the database nothing themselves.
func (b *Backend) countErased(conn *pgx.Conn) {
	ctx, cancel := b.live.timeout()
	defer cancel()
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM eventstore.erased").Scan(&n); err == nil {
		b.erasedCount.Store(n)
	}
}
