package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// queryTimeout bounds one statement or page of a read, and each round trip
// of a commit; a database that stops answering ends them sooner (liveness).
const queryTimeout = 30 * time.Second

// Options configure the backend.
type Options struct {
	// MaxConnections is the pool size, at least 2 (the writer's
	// transaction and its reads); 16 when 0.
	MaxConnections int
	// Snapshot opens the backend for reading only, every read in one
	// repeatable-read snapshot on one connection, its statements taken in turn:
	// offline verification while other nodes go on writing. It migrates
	// nothing and follows no commits.
	Snapshot bool
}

// Backend is the PostgreSQL storage backend, which any number of stores
// (nodes) share.
type Backend struct {
	pool     *pgxpool.Pool
	q        querier // the pool, or the snapshot's transaction
	snapshot pgx.Tx
	log      *zap.Logger

	serviceID string
	instance  string // the payload of this backend's notifications
	changes   chan struct{}
	listener  *listener
	live      *liveness // the context of every round trip
	watchdog  *watchdog // nil for a snapshot

	// resolveTimeout bounds the lookup of a broken commit's outcome
	// (resolveTimeout; tests shorten it).
	resolveTimeout time.Duration
	// commitHook, set by tests, runs before ("send") and after ("sent") a
	// commit's statements are sent.
	commitHook func(phase string, conn *pgconn.PgConn)
	// purgeHook, set by tests, runs when a purge copied the tables, before
	// it swaps them ("copied").
	purgeHook func(phase string)

	// resumed ends a purge that a start found pending (purge.go): the
	// purge that an erasure cut off by a stop left to do.
	resumed *resumedPurge

	erasedCount   atomic.Int64 // as the last purge counted them, -1 before
	commitRetries atomic.Uint64
	resolved      atomic.Uint64
	waiting       atomic.Bool // while resolve looks up a commit's outcome
	closeOnce     sync.Once
}

var (
	_ store.Backend = (*Backend)(nil)
	_ store.Waiter  = (*Backend)(nil)
)

// Waiting reports whether the database does not answer (the watchdog's
// probe got no answer in time), or the writer's commit is waiting for it
// to look up its outcome (the connection broke during the commit): the
// store then refuses writes at once, and Begin fails at once meanwhile.
func (b *Backend) Waiting() bool { return b.live.unresponsive() || b.waiting.Load() }

// querier runs statements: the pool, or one transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SettingError reports a server setting that would break the durability
// contract.
type SettingError struct {
	// Setting and Value name the offending setting.
	Setting, Value string
}

// Error explains the refusal.
func (e *SettingError) Error() string {
	return fmt.Sprintf("the database runs with %s = %s, so it would acknowledge commits that a crash loses: eventstore refuses it (set %s = on)", e.Setting, e.Value, e.Setting)
}

// Open connects to the database at url (a pgx connection string; several
// hosts with target_session_attrs=read-write follow a failover), creates or
// migrates the schema, and listens for the commits of other nodes. It
// fails with a *VersionError for a schema newer than SchemaVersion and a
// *SettingError when the server runs with fsync off. Errors never contain
// the URL.
func Open(ctx context.Context, url string, log *zap.Logger, opts Options) (*Backend, error) {
	cfg, err := poolConfig(url, opts)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open a connection pool: %w", err)
	}
	b := &Backend{pool: pool, q: pool, log: log, instance: uuid.NewString(), changes: make(chan struct{}, 1), live: newLiveness(), resolveTimeout: resolveTimeout}
	b.serviceID, err = migrate(ctx, pool, opts.Snapshot)
	if err == nil && opts.Snapshot {
		b.snapshot, err = pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		b.q = &serialTx{tx: b.snapshot}
	}
	if err != nil {
		pool.Close()
		var setting *SettingError
		if errors.As(err, &setting) {
			return nil, setting
		}
		return nil, fmt.Errorf("open the PostgreSQL backend: %w", err)
	}
	if !opts.Snapshot {
		b.listener = listen(cfg.ConnConfig.Copy(), b.instance, b.changes, log)
		b.watchdog = watch(cfg.ConnConfig.Copy(), b.live, log)
		b.erasedCount.Store(-1)
		b.resumed = b.resumePurge()
	}
	return b, nil
}

// poolConfig parses url and sets up every connection of the pool.
func poolConfig(url string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, and with it a password.
		return nil, errors.New("the PostgreSQL URL is not a valid connection string")
	}
	switch {
	case opts.MaxConnections == 0:
		cfg.MaxConns = 16
	case opts.MaxConnections < 2:
		return nil, fmt.Errorf("at least 2 connections are needed, got %d", opts.MaxConnections)
	default:
		cfg.MaxConns = int32(opts.MaxConnections)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	params := cfg.ConnConfig.RuntimeParams
	params["application_name"] = "eventstore"
	// A node that vanished mid-commit must not hold the head lock for long.
	params["idle_in_transaction_session_timeout"] = "60s"
	// Every read is a page that continues after a key: it must come from
	// an index scan in key order, never from a bitmap scan or a sort of
	// every match (per page), which stale statistics make look cheap. A
	// range of subjects (a subtree, a prefix) then walks the primary key
	// and filters: one pass over the ids, whatever the statistics say. A
	// read by runs sorts the rows of its page alone (runsSQL).
	params["enable_bitmapscan"] = "off"
	params["enable_sort"] = "off"
	// A page is a short statement: compiling it costs more than it saves.
	params["jit"] = "off"
	// Plan each statement for its parameters.
	params["plan_cache_mode"] = "force_custom_plan"
	cfg.AfterConnect = checkSession
	return cfg, nil
}

// checkSession refuses a server with fsync off or in recovery (a standby),
// and makes sure that commits wait for the flush of the WAL (and for the
// synchronous standbys): synchronous_commit at least on.
func checkSession(ctx context.Context, conn *pgx.Conn) error {
	var fsync, syncCommit string
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit'), pg_is_in_recovery()").Scan(&fsync, &syncCommit, &recovery); err != nil {
		return fmt.Errorf("check the server settings: %w", err)
	}
	switch {
	case fsync != "on":
		return &SettingError{Setting: "fsync", Value: fsync}
	case recovery:
		return fmt.Errorf("%w: the server is a standby in recovery, read-only (use target_session_attrs=read-write)", store.ErrUnavailable)
	}
	switch syncCommit {
	case "on", "remote_apply":
	default: // off, local, remote_write
		if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
			return fmt.Errorf("set synchronous_commit: %w", err)
		}
	}
	return nil
}

// Close stops listening and probing and closes the connections.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.resumed != nil {
			b.resumed.stop()
		}
		if b.watchdog != nil {
			b.watchdog.stop()
		}
		if b.listener != nil {
			b.listener.close()
		}
		if b.snapshot != nil {
			_ = b.snapshot.Rollback(context.Background())
		}
		b.live.end() // a round trip still in flight ends now
		b.pool.Close()
	})
	return nil
}

// ServiceID returns the UUID created with the schema: the id of the
// service that all nodes on the database form.
func (b *Backend) ServiceID() string { return b.serviceID }

// Shared returns true but for a snapshot: other nodes write the database.
func (b *Backend) Shared() bool { return b.listener != nil }

// Changes receives after other nodes committed (and after the listening
// connection was lost, when a notification may have been missed).
func (b *Backend) Changes() <-chan struct{} {
	if b.listener == nil {
		return nil
	}
	return b.changes
}

// Head returns the committed head.
func (b *Backend) Head() (store.Head, error) {
	ctx, cancel := b.live.timeout()
	defer cancel()
	return scanHead(b.q.QueryRow(ctx, "SELECT event_count, last_hash, last_time_ns, commits, state_count, restoring FROM eventstore.head"))
}

// scanHead reads a row of the head's columns, and spaces_count into extra
// if given.
func scanHead(row pgx.Row, extra ...any) (store.Head, error) {
	var count, ns, commits, states int64
	var hash string
	var restoring bool
	if err := row.Scan(append([]any{&count, &hash, &ns, &commits, &states, &restoring}, extra...)...); err != nil {
		return store.Head{}, wrap(err, "read head")
	}
	h := store.Head{Count: uint64(count), LastHash: hash, Commits: uint64(commits), States: uint64(states), Restoring: restoring}
	if count > 0 {
		h.LastTime = time.Unix(0, ns).UTC()
	}
	return h, nil
}

// Reset empties the database's log in one transaction under the head's
// lock: events, their runs, subjects, event types, feature state and its
// spaces; the head starts over (its commit count goes on, so that the
// other nodes notice).
func (b *Backend) Reset() error {
	if b.snapshot != nil {
		return errors.New("a snapshot backend is read-only")
	}
	ctx, cancel := b.live.timeout()
	defer cancel()
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		batch.Queue("SELECT 1 FROM eventstore.head FOR UPDATE")
		batch.Queue("TRUNCATE eventstore.events, eventstore.subject_runs, eventstore.type_runs, eventstore.subjects, eventstore.event_types, eventstore.state, eventstore.state_spaces, eventstore.data_keys, eventstore.erased")
		batch.Queue("UPDATE eventstore.head SET event_count = 0, last_hash = $1, last_time_ns = 0, commits = commits + 1, state_count = 0, restoring = false, spaces_count = 0", event.ZeroHash)
		queueLayoutChange(batch)
		batch.Queue("DELETE FROM eventstore.meta WHERE key = $1", purgeKey) // truncated tables keep no old bytes
		batch.Queue("SELECT pg_notify($1, $2)", channel, b.instance)
		return tx.SendBatch(ctx, batch).Close()
	})
	return wrap(err, "empty the store")
}

// SizeOnDisk returns the bytes of the tables and indexes of the schema.
func (b *Backend) SizeOnDisk() (int64, error) {
	ctx, cancel := b.live.timeout()
	defer cancel()
	var n int64
	err := b.q.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'eventstore' AND c.relkind = 'r'`).Scan(&n)
	return n, wrap(err, "measure the tables")
}

// Stats are figures of the backend for metrics.
type Stats struct {
	// InUse, Idle and Max count the pool's connections.
	InUse, Idle, Max int32
	// CommitRetries counts commits that failed with the database
	// unavailable and nothing stored, which the store tries again.
	CommitRetries uint64
	// Resolved counts commits whose connection broke during COMMIT and
	// whose outcome was then looked up.
	Resolved uint64
}

// Stats returns the backend's figures now.
func (b *Backend) Stats() Stats {
	s := b.pool.Stat()
	return Stats{
		InUse:         s.AcquiredConns(),
		Idle:          s.IdleConns(),
		Max:           s.MaxConns(),
		CommitRetries: b.commitRetries.Load(),
		Resolved:      b.resolved.Load(),
	}
}

// lastTimeNanos is the stored form of a head's time: 0 when empty.
func lastTimeNanos(h store.Head) int64 {
	if h.Count == 0 {
		return 0
	}
	return h.LastTime.UnixNano()
}
