package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/store"
)

// A node learns which spaces of feature state the other nodes changed from
// eventstore.state_spaces: for each space, the number (in the head's
// state_count) of the last change a commit made in it. Every commit that
// changes state moves the rows of its spaces, under the head's lock; a
// node that followed the changes up to n reads the spaces whose number
// exceeds n, a handful of rows, in the round trip that takes the lock.
//
// A node of a release before the table leaves it as it is. The head's
// spaces_count tells of such commits: every commit of this release sets it
// to the new state_count, so the two differ after a commit of state by an
// older node. The next commit of this release then records the gap as a
// row of the space "" (which no feature has: a space is never empty), with
// the state_count it found: a node that followed less than that cannot
// tell which spaces changed, and takes them all as changed.

// unknownSpace is the row of state_spaces that stands for changes made
// without naming their spaces.
const unknownSpace = ""

// addStateSpaces adds state_spaces and the head's spaces_count to a
// database that lacks them: a database of a release before them, or a new
// one. It changes nothing that older releases read or write, so they go on
// working on the database (their commits of state are told apart by
// spaces_count), and the schema version stays. Every node that starts
// after it reads all feature state, so the table need not know the changes
// made before it: spaces_count starts at state_count.
func addStateSpaces(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('eventstore.state_spaces') IS NOT NULL").Scan(&exists); err != nil {
		return wrap(err, "look for eventstore.state_spaces")
	}
	if exists {
		return nil
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
CREATE TABLE eventstore.state_spaces (
	space text COLLATE "C" PRIMARY KEY,
	version bigint NOT NULL
);
ALTER TABLE eventstore.head ADD COLUMN spaces_count bigint NOT NULL DEFAULT 0;
UPDATE eventstore.head SET spaces_count = state_count;
`)
		return err
	})
	return wrap(err, "create eventstore.state_spaces")
}

// spaceVersions is what a commit read of state_spaces under the head's
// lock: every row, and whether the head's spaces_count equals its
// state_count (no commit of an older node's since the last of this
// release).
type spaceVersions struct {
	complete bool
	spaces   []string
	versions []int64
}

// changedSince returns the spaces changed after change number since, or
// false when that cannot be told.
func (v spaceVersions) changedSince(since uint64) ([]string, bool) {
	if !v.complete {
		return nil, false
	}
	var out []string
	for i, space := range v.spaces {
		if v.versions[i] > toInt64(since) {
			if space == unknownSpace {
				return nil, false
			}
			out = append(out, space)
		}
	}
	return out, true
}

// scanSpaces reads the rows of state_spaces from the next query of results.
func scanSpaces(results pgx.BatchResults) (spaceVersions, error) {
	var v spaceVersions
	rows, err := results.Query()
	if err != nil {
		return v, err
	}
	defer rows.Close()
	for rows.Next() {
		var space string
		var version int64
		if err := rows.Scan(&space, &version); err != nil {
			return v, err
		}
		v.spaces, v.versions = append(v.spaces, space), append(v.versions, version)
	}
	return v, rows.Err()
}

// ChangedSpaces returns the spaces of feature state changed after change
// number since, read with the head in one statement.
func (b *Backend) ChangedSpaces(since uint64) ([]string, bool, error) {
	ctx, cancel := b.live.timeout()
	defer cancel()
	var complete bool
	var spaces []string
	err := b.q.QueryRow(ctx, `SELECT (SELECT spaces_count = state_count FROM eventstore.head),
coalesce(array_agg(space), '{}') FROM eventstore.state_spaces WHERE version > $1`, toInt64(since)).Scan(&complete, &spaces)
	if err != nil {
		return nil, false, wrap(err, "read the changed spaces of state")
	}
	if !complete || slices.Contains(spaces, unknownSpace) {
		return nil, false, nil
	}
	return spaces, true, nil
}

// queueSpaces queues the update of state_spaces for a commit of records
// after head, whose spaces_count equalled its state_count if complete:
// each space of records gets the number of its last change, and the gap an
// older node left, if any, is recorded as unknownSpace.
func queueSpaces(batch *pgx.Batch, records []store.StateRecord, head store.Head, complete bool) {
	var spaces []string
	var versions []int64
	if !complete {
		spaces, versions = append(spaces, unknownSpace), append(versions, toInt64(head.States))
	}
	for _, r := range records {
		if i := slices.Index(spaces, r.Space); i >= 0 {
			versions[i] = max(versions[i], int64(r.Version))
			continue
		}
		spaces, versions = append(spaces, r.Space), append(versions, int64(r.Version))
	}
	if len(spaces) == 0 {
		return
	}
	batch.Queue(`INSERT INTO eventstore.state_spaces (space, version)
SELECT * FROM unnest($1::text[], $2::bigint[])
ON CONFLICT (space) DO UPDATE SET version = excluded.version`, spaces, versions)
}
