package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/store"
)

// Commits serialize on the one row of eventstore.head: Begin locks it with
// SELECT … FOR UPDATE in the group's transaction and reads the committed
// head, which other nodes may have moved; Commit inserts after it and moves
// it, in the same transaction. Ids come from the head, never from a
// sequence, so a reader never sees id n+1 before n.

// followLimit is how many events of other nodes Begin reads with the head
// (as many as the store's window of recent events holds); beyond it the
// store reads them itself, in more round trips and parsing each record,
// while it holds the lock. With three nodes writing batches, the commits
// a node follows exceed a thousand events: 1,024 cost a fifth of the
// throughput.
const followLimit = 8192

// Begin starts the transaction of a group, locks the head and, in the same
// round trip, reads the ids, subjects and types of the events from known
// on (those other nodes committed since the store last looked; up to
// followLimit): what the store must know before it checks the group. Their
// records the store reads when a reader asks for them (store.Tx.Followed):
// reading them with the lock held would lengthen every commit under it, and
// nobody may read them (docs/performance.md, PostgreSQL mode). While the
// database does not answer (liveness) it fails at once.
func (b *Backend) Begin(ctx context.Context, known uint64) (store.Tx, error) {
	if b.snapshot != nil {
		return nil, errors.New("a snapshot backend is read-only")
	}
	if b.live.unresponsive() {
		b.commitRetries.Add(1)
		return nil, wrap(errNotAnswering, "begin a commit")
	}
	ctx, cancel := b.live.bound(ctx)
	defer cancel()
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		b.commitRetries.Add(1)
		return nil, wrap(err, "begin a commit")
	}
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	batch.Queue("SELECT event_count, last_hash, last_time_ns, commits, state_count, restoring, spaces_count FROM eventstore.head FOR UPDATE")
	batch.Queue("SELECT id, subject, type FROM eventstore.events WHERE id >= $1 ORDER BY id LIMIT $2", toInt64(known), followLimit)
	batch.Queue("SELECT space, version FROM eventstore.state_spaces")
	results := conn.SendBatch(ctx, batch)
	_, err = results.Exec()
	var (
		head        store.Head
		spacesCount int64
		followed    []store.Written
		spaces      spaceVersions
	)
	if err == nil {
		head, err = scanHead(results.QueryRow(), &spacesCount)
	}
	if err == nil {
		followed, err = scanWritten(results)
	}
	if err == nil {
		spaces, err = scanSpaces(results)
		spaces.complete = spacesCount == toInt64(head.States)
	}
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		conn.Release() // the pool drops a connection left in a transaction
		b.commitRetries.Add(1)
		return nil, wrap(err, "begin a commit")
	}
	if head.Count < known || uint64(len(followed)) != head.Count-known {
		followed = nil // more than followLimit: the store reads them
	}
	return &tx{b: b, conn: conn, head: head, followed: followed, spaces: spaces}, nil
}

// scanWritten reads the rows of the next query of results as events
// without records.
func scanWritten(results pgx.BatchResults) ([]store.Written, error) {
	rows, err := results.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Written
	for rows.Next() {
		var (
			id int64
			w  store.Written
		)
		if err := rows.Scan(&id, &w.Subject, &w.Type); err != nil {
			return nil, err
		}
		w.Record.ID = uint64(id)
		out = append(out, w)
	}
	return out, rows.Err()
}

// tx is the open transaction of a group, holding the head's lock.
type tx struct {
	b        *Backend
	conn     *pgxpool.Conn // nil once ended
	head     store.Head
	followed []store.Written
	spaces   spaceVersions // read with the head
}

func (t *tx) Head() store.Head { return t.head }

// ChangedSpaces returns the spaces changed after change number since, from
// the rows of state_spaces read with the head.
func (t *tx) ChangedSpaces(since uint64) ([]string, bool) { return t.spaces.changedSince(since) }

// Followed returns the events other nodes committed since the store last
// looked, read with the head without their records; nil when there were
// more than followLimit.
func (t *tx) Followed() []store.Written { return t.followed }

// Rollback ends the transaction if Commit did not.
func (t *tx) Rollback() {
	if t.conn == nil {
		return
	}
	ctx, cancel := t.b.live.timeout()
	defer cancel()
	if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = t.conn.Conn().Close(ctx)
	}
	t.conn.Release()
	t.conn = nil
}

// copyMin is the least number of events a commit copies into
// eventstore.events with COPY instead of inserting them with INSERT …
// unnest in the commit's batch. COPY costs a round trip more, but
// PostgreSQL spends less time per event on it: for large groups that wins,
// for small ones the round trip loses; this is where the two met when it
// was measured (docs/performance.md, PostgreSQL mode).
const copyMin = 256

// Commit inserts the records, their subjects and types, the feature state
// and the new head, notifies the other nodes and commits, all in one round
// trip after copying the records of a large group (copyMin). When the
// connection breaks after COMMIT was sent, or the database stops answering
// meanwhile, it finds out whether the transaction committed before it
// answers (resolve). While the database does not answer it sends nothing
// and fails at once.
func (t *tx) Commit(b store.Batch) error {
	records, head := b.Records, b.Head
	if t.conn == nil {
		return errors.New("commit of an ended transaction")
	}
	if head.Count != t.head.Count+uint64(len(records)) || head.Commits != t.head.Commits+1 {
		return fmt.Errorf("commit of %d events and head %d (commit %d) after head %d (commit %d)", len(records), head.Count, head.Commits, t.head.Count, t.head.Commits)
	}
	if t.b.live.unresponsive() {
		return t.notStored(errNotAnswering)
	}
	ctx, cancel := t.b.live.timeout()
	defer cancel()
	t.b.hook("send", t.conn)
	copied := len(records) >= copyMin
	if copied {
		if err := copyRecords(ctx, t.conn, records); err != nil {
			return t.notStored(err)
		}
	}
	batch := commitBatch(b, !copied, t.b.instance, t.head, t.spaces.complete)
	results := t.conn.SendBatch(ctx, batch)
	t.b.hook("sent", t.conn)
	failed, err := execAll(results, batch.Len())
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		t.conn.Release()
		t.conn = nil
		return nil
	case failed < batch.Len()-1 && errors.As(err, &pgErr):
		// The server answered a statement before COMMIT with an error and
		// skipped the rest.
		return t.notStored(err)
	}
	conn := t.conn
	t.conn = nil
	_ = conn.Conn().Close(ctx)
	conn.Release()
	return t.b.resolve(marker{records: records, head: head}, err)
}

// notStored ends a commit that failed before COMMIT reached the server:
// nothing is stored, and the store may try the group again if err means
// that the database is unavailable. The pool drops the connection, which
// is not idle.
func (t *tx) notStored(err error) error {
	t.conn.Release()
	t.conn = nil
	err = wrap(err, "commit")
	if errors.Is(err, store.ErrUnavailable) {
		t.b.commitRetries.Add(1)
	}
	return err
}

// copyRecords copies records into eventstore.events.
func copyRecords(ctx context.Context, conn *pgxpool.Conn, records []store.Written) error {
	n, err := conn.CopyFrom(ctx, pgx.Identifier{Schema, "events"}, []string{"id", "subject", "type", "record"},
		pgx.CopyFromSlice(len(records), func(i int) ([]any, error) {
			w := records[i]
			return []any{int64(w.Record.ID), w.Subject, w.Type, w.Record.JSON}, nil
		}))
	if err == nil && n != int64(len(records)) {
		err = fmt.Errorf("copied %d events of %d", n, len(records))
	}
	return err
}

// execAll reads the results of the n statements of a batch and returns the
// first error and the index of its statement (n-1 for an error after all).
func execAll(results pgx.BatchResults, n int) (int, error) {
	for i := 0; i < n; i++ {
		if _, err := results.Exec(); err != nil {
			_ = results.Close()
			return i, err
		}
	}
	return n - 1, results.Close()
}

// hook calls the test's commit hook, if any, at phase of a commit.
func (b *Backend) hook(phase string, conn *pgxpool.Conn) {
	if b.commitHook != nil {
		b.commitHook(phase, conn.Conn().PgConn())
	}
}

// commitBatch queues the statements of a commit after from, COMMIT
// included; the records themselves only if insert (else they were copied).
// A commit without events leaves its marker in commit_markers (marker).
// The spaces of its state go to state_spaces, after the gap that older
// nodes left unless complete (spaces.go).
func commitBatch(b store.Batch, insert bool, instance string, from store.Head, complete bool) *pgx.Batch {
	records, head := b.Records, b.Head
	batch := &pgx.Batch{}
	if insert && len(records) > 0 {
		ids := make([]int64, len(records))
		subjects := make([]string, len(records))
		types := make([]string, len(records))
		jsons := make([][]byte, len(records))
		for i, w := range records {
			ids[i], subjects[i], types[i], jsons[i] = int64(w.Record.ID), w.Subject, w.Type, w.Record.JSON
		}
		batch.Queue(`INSERT INTO eventstore.events (id, subject, type, record)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[])`, ids, subjects, types, jsons)
	}
	if len(records) > 0 {
		newSubjects, newTypes := distinct(records)
		treeKeys := make([]string, len(newSubjects))
		for i, s := range newSubjects {
			treeKeys[i] = store.TreeKey(s)
		}
		batch.Queue(`INSERT INTO eventstore.subjects (subject, tree_key)
SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`, newSubjects, treeKeys)
		batch.Queue(`INSERT INTO eventstore.event_types (type)
SELECT * FROM unnest($1::text[]) ON CONFLICT DO NOTHING`, newTypes)
		for _, r := range []runs{subjectRuns, typeRuns} {
			keys, firsts, lasts := r.of(records)
			batch.Queue("INSERT INTO "+r.table+" SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])", keys, firsts, lasts)
		}
	}
	queueDataKeys(batch, b)
	queueErased(batch, b)
	queueState(batch, b.State)
	queueSpaces(batch, b.State, from, complete)
	if len(records) == 0 {
		batch.Queue(`INSERT INTO eventstore.commit_markers (instance, commits) VALUES ($1, $2)
ON CONFLICT (instance) DO UPDATE SET commits = excluded.commits`, instance, int64(head.Commits))
	}
	batch.Queue("UPDATE eventstore.head SET event_count = $1, last_hash = $2, last_time_ns = $3, commits = $4, state_count = $5, restoring = $6, spaces_count = $5",
		int64(head.Count), head.LastHash, lastTimeNanos(head), int64(head.Commits), int64(head.States), head.Restoring)
	batch.Queue("SELECT pg_notify($1, $2)", channel, instance)
	batch.Queue("COMMIT")
	return batch
}

// queueDataKeys queues the statements that insert the postings of b
// (Postings and Backfill; a build that another node ran too may add some
// again), numbered with the commit (purge.go), and then delete those of
// the indexes b drops, its own included.
func queueDataKeys(batch *pgx.Batch, b store.Batch) {
	n := len(b.Postings) + len(b.Backfill)
	if n > 0 {
		indexes, keys, ids := make([]int64, 0, n), make([][]byte, 0, n), make([]int64, 0, n)
		for _, postings := range [][]store.Posting{b.Postings, b.Backfill} {
			for _, p := range postings {
				indexes, keys, ids = append(indexes, int64(p.Index)), append(keys, []byte(p.Key)), append(ids, int64(p.ID))
			}
		}
		batch.Queue(`INSERT INTO eventstore.data_keys (index_id, key, event_id, commit_no)
SELECT *, $4::bigint FROM unnest($1::bigint[], $2::bytea[], $3::bigint[]) ON CONFLICT DO NOTHING`, indexes, keys, ids, int64(b.Head.Commits))
	}
	if len(b.Dropped) > 0 {
		dropped := make([]int64, len(b.Dropped))
		for i, id := range b.Dropped {
			dropped[i] = int64(id)
		}
		batch.Queue("DELETE FROM eventstore.data_keys WHERE index_id = ANY($1)", dropped)
		queueLayoutChange(batch) // a rewrite copied before has the postings
	}
}

// of returns the runs of records, which have consecutive ids: the value of
// each, with its first and last id.
func (r runs) of(records []store.Written) (keys []string, firsts, lasts []int64) {
	for i, w := range records {
		key := r.value(w)
		id := int64(w.Record.ID)
		if i > 0 && key == keys[len(keys)-1] {
			lasts[len(lasts)-1] = id
			continue
		}
		keys, firsts, lasts = append(keys, key), append(firsts, id), append(lasts, id)
	}
	return keys, firsts, lasts
}

// distinct returns the subjects and the types of records, each once.
func distinct(records []store.Written) (subjects, types []string) {
	seenSubjects, seenTypes := map[string]bool{}, map[string]bool{}
	for _, w := range records {
		if !seenSubjects[w.Subject] {
			seenSubjects[w.Subject] = true
			subjects = append(subjects, w.Subject)
		}
		if !seenTypes[w.Type] {
			seenTypes[w.Type] = true
			types = append(types, w.Type)
		}
	}
	return subjects, types
}

// Waits between the attempts to learn a commit's outcome: from
// resolveWait, doubling, at most resolveMaxWait, for resolveTimeout.
const (
	resolveWait    = 50 * time.Millisecond
	resolveMaxWait = 2 * time.Second
	resolveTimeout = 2 * time.Minute
)

// marker is what a group's transaction leaves when it commits: its first
// event, or (for a commit without events) the commit's number as this
// instance's row of commit_markers.
type marker struct {
	records []store.Written
	head    store.Head
}

// resolve finds out whether the commit of m, whose connection broke with
// cause, committed: nil if it did, an error wrapping store.ErrUnavailable
// if it did not (the store tries the group again). It first takes the head's
// lock, so that the transaction, if the server still runs it, has ended.
// It asks until the database answers; when it does not within
// resolveTimeout, the outcome stays unknown and the error stops the store.
// It logs the lookup once when it starts and once when it ends.
func (b *Backend) resolve(m marker, cause error) error {
	b.resolved.Add(1)
	b.waiting.Store(true)
	defer b.waiting.Store(false)
	start := time.Now()
	b.log.Warn("connection lost during a commit, looking up its outcome", zap.Error(cause))
	committed, err := b.lookUp(m)
	took := zap.Duration("took", time.Since(start))
	switch {
	case err != nil:
		b.log.Warn("the outcome of a commit is unknown", zap.Error(err), took)
		// Not an unavailable error (%v, not %w): the store must not try the
		// group again, which might store it twice; it stops.
		return fmt.Errorf("commit: the connection broke (%v) and its outcome is unknown: %v", cause, err)
	case committed:
		b.log.Info("looked up the outcome of a commit: committed", took)
		return nil
	}
	b.log.Info("looked up the outcome of a commit: not committed, nothing stored", took)
	b.commitRetries.Add(1)
	return wrap(cause, "commit (not committed)")
}

// lookUp asks whether the commit of m committed until the database
// answers, waiting between the attempts (from resolveWait, doubling, at
// most resolveMaxWait, less when the database answers again); it gives up
// after resolveTimeout, or at once on an error that is not the database
// being unavailable.
func (b *Backend) lookUp(m marker) (bool, error) {
	deadline := time.Now().Add(b.resolveTimeout)
	for wait := resolveWait; ; wait = min(2*wait, resolveMaxWait) {
		committed, err := b.committed(m)
		if err == nil || !unavailable(err) || time.Now().After(deadline) {
			return committed, err
		}
		b.live.sleep(wait)
	}
}

// committed looks for m's marker after waiting for the head's lock.
func (b *Backend) committed(m marker) (bool, error) {
	ctx, cancel := b.live.timeout()
	defer cancel()
	var found bool
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT 1 FROM eventstore.head FOR UPDATE"); err != nil {
			return err
		}
		var stored []byte
		var err error
		if len(m.records) > 0 {
			first := m.records[0].Record
			err = tx.QueryRow(ctx, "SELECT record FROM eventstore.events WHERE id = $1", int64(first.ID)).Scan(&stored)
			found = err == nil && bytes.Equal(stored, first.JSON)
		} else {
			var commits int64
			err = tx.QueryRow(ctx, "SELECT commits FROM eventstore.commit_markers WHERE instance = $1", b.instance).Scan(&commits)
			found = err == nil && commits == int64(m.head.Commits)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		return err
	})
	return found, wrap(err, "look up the outcome of a commit")
}
