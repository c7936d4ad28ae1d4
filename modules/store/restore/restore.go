package restore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
)

// One commit of a restore holds batchEvents events or, of larger events,
// batchBytes of records.
const (
	batchEvents = 10_000
	batchBytes  = 8 << 20
)

// ErrNotEmpty refuses a restore into a store that holds events or feature
// state (schemas), or held feature state once.
var ErrNotEmpty = errors.New("the store is not empty")

// BackupError reports a backup that cannot be restored: the line and what
// is wrong with it.
type BackupError struct {
	Line   int
	Detail string
}

// Error describes the problem.
func (e *BackupError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Detail) }

// Item is one line of a backup: a verified event (its record as the store
// keeps it, with its subject and type), a schema, a data index's
// definition (validated), or the feature state of another kind of line (a
// subscription's), restored as it is.
type Item struct {
	Line      int
	Event     *store.Written
	Schema    *store.SchemaWritten
	DataIndex *dataindex.Definition
	// State are records of feature state, their versions unset; they
	// follow the events and are committed with the schemas.
	State []store.StateRecord
}

// Source yields the items of a backup in order; io.EOF ends it. An error
// ends the restore as it is (a *BackupError for a bad line).
type Source interface {
	Next() (Item, error)
}

// Restored describes a completed restore.
type Restored struct {
	Events   uint64
	Schemas  int
	HeadHash string
	// States counts the items that held State (subscription lines).
	States int
	// DataIndexes counts the data indexes registered and built.
	DataIndexes int
}

// Hooks are called as a restore goes on; nil ones are not.
type Hooks struct {
	// Begin is called once the store was found empty, before anything of
	// the backup is written; its error ends the restore, nothing written.
	// A refused restore (ErrNotEmpty) never calls it.
	Begin func() error
	// Progress learns how many events are in after each batch.
	Progress func(events uint64)
}

// job is a restore under way.
type job struct {
	ctx      context.Context
	src      Source
	hooks    Hooks
	log      *zap.Logger
	limit    int // of schemas
	indexes  int // the limit of data indexes
	now      func() time.Time
	backend  store.Backend
	head     store.Head // what the backend holds so far
	restored Restored
}

// Into writes the events, schemas, data indexes and feature state of src
// into the empty store s, all or nothing, and makes them visible at once
// when all are in: the data indexes built, ready to serve. The events are
// taken as src verified them (ids from 0, links, hashes, times); the
// restore checks that ids and links continue, that every restored event
// of a type with a schema matches it, and that the schemas are within the
// store's limit. Writes wait meanwhile (store.Exclusive).
//
// Restores are all or nothing: the events are committed in batches, the
// head marked Restoring, and readers see none of them until the last
// commit clears the mark. A failure empties the backend again; so does the
// next start after a crash in the middle (store.Start finds the mark). It
// fails with ErrNotEmpty, a *BackupError, store.ErrReadOnly, the error of
// hooks.Begin or of src, ctx's error or a storage failure; after any
// failure the store is empty.
func Into(ctx context.Context, s *store.Store, src Source, hooks Hooks, log *zap.Logger) (Restored, error) {
	j := &job{ctx: ctx, src: src, hooks: hooks, log: log, limit: s.SchemaLimit(), indexes: s.DataIndexLimit(), now: time.Now}
	err := s.Exclusive(ctx, func(b store.Backend, head store.Head) error {
		j.backend, j.head = b, head
		return j.run()
	})
	return j.restored, err
}

// run restores into the backend the job holds alone.
func (j *job) run() error {
	if j.head.Count > 0 || j.head.States > 0 {
		return ErrNotEmpty
	}
	if j.hooks.Begin != nil {
		if err := j.hooks.Begin(); err != nil {
			return err
		}
	}
	if err := j.write(); err != nil {
		if resetErr := j.backend.Reset(); resetErr != nil {
			return fmt.Errorf("%w; empty the store after the failed restore: %w", err, resetErr)
		}
		return err
	}
	j.restored.HeadHash = j.head.LastHash
	return nil
}

// commit commits b after what the job committed so far.
func (j *job) commit(b store.Batch) error {
	tx, err := j.backend.Begin(j.ctx, j.head.Count)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if h := tx.Head(); h.Count != j.head.Count || h.LastHash != j.head.LastHash || h.Commits != j.head.Commits {
		return ErrNotEmpty // another node wrote meanwhile
	}
	if err := tx.Commit(b); err != nil {
		return err
	}
	j.head = b.Head
	return nil
}

// write commits the items of the source: the events in batches, marked
// Restoring, then the schemas with the last commit, which clears the mark.
func (j *job) write() error {
	p := &pending{head: j.head, keys: map[[2]string]bool{}}
	p.head.Restoring = true
	if err := j.readItems(p); err != nil {
		return err
	}
	if err := j.commitLastBatch(p); err != nil {
		return err
	}
	if err := j.checkSchemas(p); err != nil {
		return err
	}
	if err := j.buildIndexes(p); err != nil {
		return err
	}
	if err := j.commitState(p); err != nil {
		return err
	}
	j.restored.Events, j.restored.Schemas, j.restored.DataIndexes = p.head.Count, len(p.schemas), len(p.indexes)
	j.progress(p.head.Count)
	j.log.Info("restored a backup", zap.Uint64("events", p.head.Count), zap.Int("schemas", len(p.schemas)), zap.Int("dataIndexes", len(p.indexes)))
	return nil
}

// lastTime sets the head's time to that of its last event: the last of
// batch, or the last committed.
func (j *job) lastTime(head *store.Head, batch []store.Written) error {
	if head.Count == 0 {
		return nil
	}
	var last event.Record
	if len(batch) > 0 {
		last = batch[len(batch)-1].Record
	} else {
		r, found, err := j.backend.Record(head.Count - 1)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("restored event %d is missing", head.Count-1)
		}
		last = r
	}
	f, err := event.Decode(last)
	if err != nil {
		return err
	}
	head.LastTime, err = event.ParseTime(f.Time)
	return err
}

// checkSchema compiles a restored schema and checks every restored event
// of its type against it.
func (j *job) checkSchema(sw store.SchemaWritten, count uint64, line int) error {
	sch, err := schema.Compile(sw.Raw)
	if err != nil {
		return &BackupError{Line: line, Detail: fmt.Sprintf("schema of %s: %v", sw.Type, err)}
	}
	if count == 0 {
		return nil
	}
	it := j.backend.Scan(store.Scan{Type: sw.Type, From: 0, To: count - 1})
	for it.Next() {
		if err := store.ValidateRecord(it.Record(), sch); err != nil {
			it.Close()
			var conflict *store.ExistingConflictError
			if errors.As(err, &conflict) {
				return &BackupError{Line: line, Detail: fmt.Sprintf("event %d does not match the schema of %s: %s", conflict.ID, sw.Type, conflict.Msg)}
			}
			return err
		}
	}
	return it.Close()
}
