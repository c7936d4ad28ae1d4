package store

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// Restores are all or nothing: the writer commits a backup's events in
// batches, the head marked Restoring, and readers see none of them until
// the last commit clears the mark. A failure empties the backend again; so
// does the next start after a crash in the middle (Start finds the mark).

// One commit of a restore holds restoreBatch events or, of larger events,
// restoreBatchBytes of records.
const (
	restoreBatch      = 10_000
	restoreBatchBytes = 8 << 20
)

// ErrNotEmpty refuses a restore into a store that holds events or schemas.
var ErrNotEmpty = errors.New("the store is not empty")

// BackupError reports a backup that cannot be restored: the line and what
// is wrong with it.
type BackupError struct {
	Line   int
	Detail string
}

// Error describes the problem.
func (e *BackupError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Detail) }

// RestoreItem is one line of a backup: a verified event (its record as the
// store keeps it, with its subject and type) or a schema.
type RestoreItem struct {
	Line   int
	Event  *Written
	Schema *SchemaWritten
}

// RestoreSource yields the items of a backup in order; io.EOF ends it. An
// error ends the restore as it is (a *BackupError for a bad line).
type RestoreSource interface {
	Next() (RestoreItem, error)
}

// Restored describes a completed restore.
type Restored struct {
	Events   uint64
	Schemas  int
	HeadHash string
}

// RestoreHooks are called as a restore goes on; nil ones are not.
type RestoreHooks struct {
	// Begin is called once the store was found empty, before anything of
	// the backup is written; its error ends the restore, nothing written.
	// A refused restore (ErrNotEmpty) never calls it.
	Begin func() error
	// Progress learns how many events are in after each batch.
	Progress func(events uint64)
}

// restoreJob is a restore under way.
type restoreJob struct {
	ctx      context.Context
	src      RestoreSource
	hooks    RestoreHooks
	restored Restored
}

// Restore writes the events and schemas of src into the empty store, all
// or nothing, and makes them visible at once when all are in. The events
// are taken as src verified them (ids from 0, links, hashes, times); the
// store checks that ids and links continue, that every restored event of
// a type with a schema matches it, and that the schemas are within the
// limit (Memory.MaxSchemas). Writes wait meanwhile. It fails with
// ErrNotEmpty, a *BackupError, ErrReadOnly, the error of hooks.Begin or of
// src, ctx's error or a storage failure; after any failure the store is
// empty.
func (s *Store) Restore(ctx context.Context, src RestoreSource, hooks RestoreHooks) (Restored, error) {
	if err := s.refusal(); err != nil {
		return Restored{}, err
	}
	// The writer pauses meanwhile: Restore is the writer.
	s.writing.Lock()
	defer s.writing.Unlock()
	job := &restoreJob{ctx: ctx, src: src, hooks: hooks}
	err := s.restore(job)
	return job.restored, err
}

// restore runs a restore job while the writer pauses.
func (s *Store) restore(job *restoreJob) error {
	tx, err := s.backend.Begin(job.ctx, s.head.Count)
	if err != nil {
		return err
	}
	err = s.follow(tx.Head(), tx.Followed())
	tx.Rollback()
	if err != nil {
		return err
	}
	if s.head.Count > 0 || len(s.schemas.snapshot()) > 0 {
		return ErrNotEmpty
	}
	if job.hooks.Begin != nil {
		if err := job.hooks.Begin(); err != nil {
			return err
		}
	}
	head, err := s.writeBackup(job)
	if err != nil {
		if resetErr := s.backend.Reset(); resetErr != nil {
			return s.fail(fmt.Errorf("empty the store after a failed restore: %w", resetErr))
		}
		return err
	}
	s.head = head
	if err := s.loadSchemas(s.backend); err != nil {
		return s.fail(err)
	}
	s.recent.reset()
	s.latestIDs.purge()
	s.advance(nil)
	job.restored.HeadHash = head.LastHash
	return nil
}

// writeBackup commits the items of a restore job and returns the head it
// ends with.
func (s *Store) writeBackup(job *restoreJob) (Head, error) {
	head := s.head
	head.Restoring = true
	var (
		batch   []Written
		schemas []SchemaWritten
		lines   []int // of schemas
		buf     []byte
	)
	committed := s.head // what the backend holds so far
	commit := func(h Head, records []Written, registered []SchemaWritten) error {
		tx, err := s.backend.Begin(job.ctx, s.head.Count)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if !tx.Head().same(committed) { // another node wrote meanwhile
			return ErrNotEmpty
		}
		if err := tx.Commit(records, h, registered); err != nil {
			return err
		}
		committed = h
		return nil
	}
	for {
		item, err := job.src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Head{}, err
		}
		if err := job.ctx.Err(); err != nil {
			return Head{}, err
		}
		if item.Schema != nil {
			if len(schemas) >= s.schemas.limit { // into an empty store: the backup's are all it holds
				return Head{}, &BackupError{Line: item.Line, Detail: ErrTooManySchemas.Error()}
			}
			schemas, lines = append(schemas, *item.Schema), append(lines, item.Line)
			continue
		}
		if len(schemas) > 0 {
			return Head{}, &BackupError{Line: item.Line, Detail: "an event after the schemas"}
		}
		r := item.Event.Record
		if r.ID != head.Count {
			return Head{}, &BackupError{Line: item.Line, Detail: fmt.Sprintf("event %d where event %d was due", r.ID, head.Count)}
		}
		// The record's own bytes may be reused by the source: keep a copy.
		start := len(buf)
		buf = append(buf, r.JSON...)
		written := *item.Event
		written.Record.JSON = buf[start:len(buf):len(buf)]
		batch = append(batch, written)
		head.Count++
		head.LastHash = written.Record.Hash()
		if len(batch) == restoreBatch || len(buf) >= restoreBatchBytes {
			head.Commits++
			if err := commit(head, batch, nil); err != nil {
				return Head{}, err
			}
			batch, buf = batch[:0], buf[:0] // committed: the bytes may be reused
			if job.hooks.Progress != nil {
				job.hooks.Progress(head.Count)
			}
		}
	}
	if head.Count > 0 {
		var last event.Record
		if len(batch) > 0 {
			last = batch[len(batch)-1].Record
		} else {
			var err error
			if last, err = recordAt(s.backend, head.Count-1); err != nil {
				return Head{}, err
			}
		}
		f, err := event.Decode(last)
		if err != nil {
			return Head{}, err
		}
		if head.LastTime, err = event.ParseTime(f.Time); err != nil {
			return Head{}, err
		}
	}
	if len(batch) > 0 {
		head.Commits++
		if err := commit(head, batch, nil); err != nil {
			return Head{}, err
		}
	}
	for i, sw := range schemas {
		if err := s.checkRestoredSchema(sw, head.Count, lines[i]); err != nil {
			return Head{}, err
		}
	}
	head.Restoring = false
	head.Commits++
	head.Schemas += uint64(len(schemas))
	if err := commit(head, nil, schemas); err != nil {
		return Head{}, err
	}
	job.restored.Events, job.restored.Schemas = head.Count, len(schemas)
	if job.hooks.Progress != nil {
		job.hooks.Progress(head.Count)
	}
	s.log.Info("restored a backup", zap.Uint64("events", head.Count), zap.Int("schemas", len(schemas)))
	return head, nil
}

// checkRestoredSchema compiles a restored schema and checks every restored
// event of its type against it.
func (s *Store) checkRestoredSchema(sw SchemaWritten, count uint64, line int) error {
	sch, err := schema.Compile(sw.Raw)
	if err != nil {
		return &BackupError{Line: line, Detail: fmt.Sprintf("schema of %s: %v", sw.Type, err)}
	}
	if count == 0 {
		return nil
	}
	it := s.backend.Scan(Scan{Type: sw.Type, From: 0, To: count - 1})
	for it.Next() {
		if err := validateRecord(it.Record(), sch); err != nil {
			it.Close()
			var conflict *ExistingConflictError
			if errors.As(err, &conflict) {
				return &BackupError{Line: line, Detail: fmt.Sprintf("event %d does not match the schema of %s: %s", conflict.ID, sw.Type, conflict.Msg)}
			}
			return err
		}
	}
	return it.Close()
}
