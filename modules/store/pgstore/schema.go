package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// SchemaVersion is the version of the database schema this binary uses.
// The database records its version in eventstore.meta; Open migrates an
// older one, one step per version, and refuses a newer one.
const SchemaVersion Version = 6

// Version is a version of the database schema.
type Version int

// Schema is the PostgreSQL schema that holds the tables.
const Schema = "eventstore"

// migrationLock is the key of the advisory lock that serializes the
// migrations of nodes starting at the same time.
const migrationLock = 0x6576656e7473 // "events"

// VersionError reports a database whose schema version this binary cannot use.
type VersionError struct {
	// Version is the database's schema version.
	Version Version
}

// Error names both versions and what to do.
func (e *VersionError) Error() string {
	if e.Version > SchemaVersion {
		return fmt.Sprintf("the database has eventstore schema version %d, newer than version %d of this binary: run a release that supports version %d", e.Version, SchemaVersion, e.Version)
	}
	return fmt.Sprintf("the database has eventstore schema version %d, older than version %d of this binary: start a node on it once to migrate it", e.Version, SchemaVersion)
}

// migrations[v] moves a database from schema version v to v+1; each runs
// in one transaction with the update of the recorded version.
var migrations = []func(ctx context.Context, tx pgx.Tx) error{
	0: createSchema,
	1: dropSubjectTypeIndex,
	2: indexByRuns,
	3: featureState,
	4: dataKeys,
	5: erasure,
}

// createSchema creates the tables of version 1:
//
//	head        the one row every commit locks: event count, last hash, last time, commits,
//	            registered schemas, and whether a restore is writing the log
//	events      the records with their subject and type, indexed by (subject, id)
//	            and (type, id) until version 3 (indexByRuns), and by (subject, type,
//	            id) until version 2
//	subjects    every subject with events, with its tree key (store.TreeKey)
//	event_types every type of an event
//	schemas     the registered schemas, with the commit that registered them and
//	            their place in the registration order (inserted under the head's lock)
//	meta        the schema version and the service id
func createSchema(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE eventstore.head (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	event_count bigint NOT NULL,
	last_hash text NOT NULL,
	last_time_ns bigint NOT NULL,
	commits bigint NOT NULL,
	schema_count bigint NOT NULL,
	restoring boolean NOT NULL
);
INSERT INTO eventstore.head VALUES (true, 0, '`+event.ZeroHash+`', 0, 0, 0, false);
CREATE TABLE eventstore.events (
	id bigint PRIMARY KEY,
	subject text COLLATE "C" NOT NULL,
	type text COLLATE "C" NOT NULL,
	record bytea NOT NULL
);
CREATE INDEX events_subject ON eventstore.events (subject, id);
CREATE INDEX events_type ON eventstore.events (type, id);
CREATE INDEX events_subject_type ON eventstore.events (subject, type, id);
CREATE TABLE eventstore.subjects (
	subject text COLLATE "C" PRIMARY KEY,
	tree_key text COLLATE "C" NOT NULL UNIQUE
);
CREATE TABLE eventstore.event_types (type text COLLATE "C" PRIMARY KEY);
CREATE TABLE eventstore.schemas (
	event_type text COLLATE "C" PRIMARY KEY,
	raw bytea NOT NULL,
	commits bigint NOT NULL,
	position bigint GENERATED ALWAYS AS IDENTITY
);
`)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO eventstore.meta VALUES ('service_id', $1)", uuid.NewString())
	return err
}

// dropSubjectTypeIndex moves version 1 to 2: events loses its index by
// (subject, type, id), about a quarter of what PostgreSQL spends inserting
// an event. Its two uses read the subject's index and filter by type
// instead: the latest event of a subject with a type (fromLatestEvent)
// walks back over the subject's newer events of other types, a scan of a
// subject and a type reads the subject's events in the range.
func dropSubjectTypeIndex(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "DROP INDEX eventstore.events_subject_type")
	return err
}

// indexByRuns moves version 2 to 3: the indexes of events by (subject, id)
// and (type, id), two index entries an event and half of what PostgreSQL
// spent inserting it, give way to runs: subject_runs and type_runs hold,
// for each maximal sequence of consecutive ids with one subject (type),
// its first and last id, keyed by (subject, last_id) and (type, last_id).
// A commit adds its runs, one for a batch on one subject however large; a
// read of a subject or a type walks its runs and reads each run's events
// by id. Runs of this migration may span commits; the commits after it add
// runs of their own events only.
func indexByRuns(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE eventstore.subject_runs (
	subject text COLLATE "C" NOT NULL,
	first_id bigint NOT NULL,
	last_id bigint NOT NULL,
	PRIMARY KEY (subject, last_id)
);
CREATE TABLE eventstore.type_runs (
	type text COLLATE "C" NOT NULL,
	first_id bigint NOT NULL,
	last_id bigint NOT NULL,
	PRIMARY KEY (type, last_id)
);
INSERT INTO eventstore.subject_runs
SELECT subject, min(id), max(id)
FROM (SELECT subject, id, id - row_number() OVER (PARTITION BY subject ORDER BY id) AS run FROM eventstore.events) e
GROUP BY subject, run;
INSERT INTO eventstore.type_runs
SELECT type, min(id), max(id)
FROM (SELECT type, id, id - row_number() OVER (PARTITION BY type ORDER BY id) AS run FROM eventstore.events) e
GROUP BY type, run;
DROP INDEX eventstore.events_subject;
DROP INDEX eventstore.events_type;
`)
	return err
}

// featureState moves version 3 to 4: the registered schemas become
// records of feature state (store.SchemaSpace), versioned 1, 2, … in their
// registration order, and the head counts state changes instead of schemas:
//
//	state          every record of feature state: space, key, value, version
//	commit_markers per node instance, the number of its last commit without
//	               events, which tells a commit whose answer was lost apart
//	               (tx.go, marker)
func featureState(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE eventstore.state (
	space text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	value bytea NOT NULL,
	version bigint NOT NULL,
	PRIMARY KEY (space, key)
);
CREATE TABLE eventstore.commit_markers (
	instance text PRIMARY KEY,
	commits bigint NOT NULL
);
INSERT INTO eventstore.state (space, key, value, version)
SELECT '`+store.SchemaSpace+`', event_type, raw, row_number() OVER (ORDER BY position) FROM eventstore.schemas;
ALTER TABLE eventstore.head RENAME COLUMN schema_count TO state_count;
UPDATE eventstore.head SET state_count = (SELECT count(*) FROM eventstore.schemas);
DROP TABLE eventstore.schemas;
`)
	return err
}

// dataKeys moves version 4 to 5: the keys of the data indexes
// (store.Posting), the index as its id's bits, the key as bytes (a key may
// hold NUL, which text cannot):
//
//	data_keys  (index_id, key, event_id), the primary key, read by index and
//	           key in id order
func dataKeys(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE eventstore.data_keys (
	index_id bigint NOT NULL,
	key bytea NOT NULL,
	event_id bigint NOT NULL,
	PRIMARY KEY (index_id, key, event_id)
);
`)
	return err
}

// erasure moves version 5 to 6: the digests of the original data of
// erased events (store.DigestKeeper), which verify their hashes, and the
// number of the commit that wrote each key of a data index, by which a
// purge (purge.go) finds the keys written while it copied the table:
//
//	erased     (event_id, data_hash), the SHA-256 of the data an event had
//	           before its erasure, written with its erased form or restored
//	data_keys  gains commit_no (0 for the keys written before), with a
//	           block-range index: keys are appended in commit order
func erasure(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE eventstore.erased (
	event_id bigint PRIMARY KEY,
	data_hash bytea NOT NULL CHECK (length(data_hash) = 32)
);
ALTER TABLE eventstore.data_keys ADD COLUMN commit_no bigint NOT NULL DEFAULT 0;
CREATE INDEX data_keys_commit_no ON eventstore.data_keys USING brin (commit_no);
`)
	return err
}

// migrate creates or migrates the schema under the advisory lock, unless
// readOnly, and returns the service id.
func migrate(ctx context.Context, pool *pgxpool.Pool, readOnly bool) (string, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return "", wrap(err, "connect")
	}
	defer conn.Release()
	if !readOnly {
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
			return "", wrap(err, "take the migration lock")
		}
		defer func() {
			if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLock); err != nil {
				conn.Conn().Close(context.Background()) // closing the session releases the lock
			}
		}()
		if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS eventstore;
CREATE TABLE IF NOT EXISTS eventstore.meta (key text PRIMARY KEY, value text NOT NULL)`); err != nil {
			return "", wrap(err, "create schema %s", Schema)
		}
	}
	version, err := schemaVersion(ctx, conn.Conn())
	if err != nil {
		return "", err
	}
	if version > SchemaVersion || (readOnly && version != SchemaVersion) {
		return "", &VersionError{Version: version}
	}
	for v := version; v < SchemaVersion; v++ {
		if err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if err := migrations[v](ctx, tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO eventstore.meta VALUES ('version', $1)
ON CONFLICT (key) DO UPDATE SET value = excluded.value`, strconv.Itoa(int(v+1)))
			return err
		}); err != nil {
			return "", wrap(err, "migrate schema version %d to %d", v, v+1)
		}
	}
	if !readOnly {
		if err := addStateSpaces(ctx, conn.Conn()); err != nil {
			return "", err
		}
	}
	var id string
	if err := conn.QueryRow(ctx, "SELECT value FROM eventstore.meta WHERE key = 'service_id'").Scan(&id); err != nil {
		return "", wrap(err, "read the service id")
	}
	return id, nil
}

// schemaVersion returns the recorded schema version, 0 for a database
// without the schema.
func schemaVersion(ctx context.Context, conn *pgx.Conn) (Version, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('eventstore.meta') IS NOT NULL").Scan(&exists); err != nil {
		return 0, wrap(err, "look for the schema")
	}
	if !exists {
		return 0, nil
	}
	var raw string
	err := conn.QueryRow(ctx, "SELECT value FROM eventstore.meta WHERE key = 'version'").Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap(err, "read the schema version")
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("the database records the schema version %q, not a positive number", raw)
	}
	return Version(v), nil
}
