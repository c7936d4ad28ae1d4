package restore

import (
	"fmt"
	"io"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// The steps of job.write, in its order.

// pending is what write has read of the source: the head of the events
// read so far, the events not committed yet, and the schemas and feature
// state, which the last commit holds.
type pending struct {
	head    store.Head // marked Restoring until the last commit
	batch   []store.Written
	buf     []byte // the bytes of batch's records
	schemas []store.SchemaWritten
	lines   []int // of schemas
	indexes []*store.DataIndex
	state   []store.StateRecord
	keys    map[[2]string]bool // of state
}

// readItems reads the source to its end and takes in each item, committing
// the events a batch at a time.
func (j *job) readItems(p *pending) error {
	for {
		item, err := j.src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := j.ctx.Err(); err != nil {
			return err
		}
		if err := j.take(p, item); err != nil {
			return err
		}
	}
}

// take takes in one item where the backup's order allows it: the events
// first, then the schemas, then the data index and state lines (schemas
// may follow those too).
func (j *job) take(p *pending, item Item) error {
	if item.DataIndex != nil {
		return j.addIndex(p, item)
	}
	if item.State != nil {
		if err := p.addState(item); err != nil {
			return err
		}
		j.restored.States++
		return nil
	}
	if len(p.state)+len(p.indexes) > 0 && item.Event != nil {
		return &BackupError{Line: item.Line, Detail: "an event after the state lines"}
	}
	if item.Schema != nil {
		return j.addSchema(p, item)
	}
	if item.Event == nil {
		return &BackupError{Line: item.Line, Detail: "an item of no kind (no event, schema, data index or state)"}
	}
	if len(p.schemas) > 0 {
		return &BackupError{Line: item.Line, Detail: "an event after the schemas"}
	}
	return j.addEvent(p, item)
}

// addState keeps the feature state of a state line; a key may appear only
// once in a backup.
func (p *pending) addState(item Item) error {
	for _, r := range item.State {
		if p.keys[[2]string{r.Space, r.Key}] {
			return &BackupError{Line: item.Line, Detail: fmt.Sprintf("%s %s appears twice", r.Space, r.Key)}
		}
		p.keys[[2]string{r.Space, r.Key}] = true
	}
	p.state = append(p.state, item.State...)
	return nil
}

// addIndex keeps the data index of item, within the store's limit; a name
// may appear only once in a backup.
func (j *job) addIndex(p *pending, item Item) error {
	d := *item.DataIndex
	for _, x := range p.indexes {
		if x.Name == d.Name {
			return &BackupError{Line: item.Line, Detail: fmt.Sprintf("data index %s appears twice", event.Quote(d.Name))}
		}
	}
	if len(p.indexes) >= j.indexes {
		return &BackupError{Line: item.Line, Detail: store.ErrTooManyDataIndexes.Error()}
	}
	x, err := store.NewDataIndex(d, j.now())
	if err != nil {
		return &BackupError{Line: item.Line, Detail: fmt.Sprintf("data index %s: %v", event.Quote(d.Name), err)}
	}
	p.indexes = append(p.indexes, x)
	return nil
}

// addSchema keeps the schema of item, within the store's limit.
func (j *job) addSchema(p *pending, item Item) error {
	if len(p.schemas) >= j.limit { // into an empty store: the backup's are all it holds
		return &BackupError{Line: item.Line, Detail: store.ErrTooManySchemas.Error()}
	}
	p.schemas, p.lines = append(p.schemas, *item.Schema), append(p.lines, item.Line)
	return nil
}

// addEvent adds the event of item to the batch if its id is the next, and
// commits the batch when it is full: batchEvents events or batchBytes of
// records.
func (j *job) addEvent(p *pending, item Item) error {
	r := item.Event.Record
	if r.ID != p.head.Count {
		return &BackupError{Line: item.Line, Detail: fmt.Sprintf("event %d where event %d was due", r.ID, p.head.Count)}
	}
	if _, keeps := j.backend.(store.DigestKeeper); item.Event.Kept != nil && !keeps {
		return &BackupError{Line: item.Line, Detail: "an erased event (dataHash), which this storage backend cannot keep"}
	}
	// The record's own bytes may be reused by the source: keep a copy.
	start := len(p.buf)
	p.buf = append(p.buf, r.JSON...)
	written := *item.Event
	written.Record.JSON = p.buf[start:len(p.buf):len(p.buf)]
	p.batch = append(p.batch, written)
	p.head.Count++
	p.head.LastHash = written.Record.Hash()
	if len(p.batch) == batchEvents || len(p.buf) >= batchBytes {
		if err := j.commitBatch(p); err != nil {
			return err
		}
		j.progress(p.head.Count)
	}
	return nil
}

// commitBatch commits the batch of events and empties it for the next.
func (j *job) commitBatch(p *pending) error {
	p.head.Commits++
	if err := j.commit(store.Batch{Records: p.batch, Head: p.head}); err != nil {
		return err
	}
	p.batch, p.buf = p.batch[:0], p.buf[:0] // committed: the bytes may be reused
	return nil
}

// commitLastBatch sets the head's time to that of the last event and
// commits the events still in the batch, if any.
func (j *job) commitLastBatch(p *pending) error {
	if err := j.lastTime(&p.head, p.batch); err != nil {
		return err
	}
	if len(p.batch) == 0 {
		return nil
	}
	return j.commitBatch(p)
}

// checkSchemas checks every schema of the backup and the restored events
// of its type against it.
func (j *job) checkSchemas(p *pending) error {
	for i, sw := range p.schemas {
		if err := j.checkSchema(sw, p.head.Count, p.lines[i]); err != nil {
			return err
		}
	}
	return nil
}

// buildIndexes keys the restored events for each data index, a batch of
// events a commit, still marked Restoring; the indexes are ready when
// their records are committed (commitState), keying what follows.
func (j *job) buildIndexes(p *pending) error {
	for _, x := range p.indexes {
		for from := uint64(0); from < p.head.Count; from += batchEvents {
			postings, err := x.Postings(j.backend, from, min(from+batchEvents, p.head.Count))
			if err != nil {
				return err
			}
			if err := j.ctx.Err(); err != nil {
				return err
			}
			if len(postings) == 0 {
				continue
			}
			p.head.Commits++
			if err := j.commit(store.Batch{Backfill: postings, Head: p.head}); err != nil {
				return err
			}
		}
		x.From, x.Next = p.head.Count, p.head.Count
	}
	return nil
}

// commitState commits the schemas, the data indexes and then the feature
// state, each record at the next state version, in the last commit, which
// clears the Restoring mark.
func (j *job) commitState(p *pending) error {
	p.head.Restoring = false
	p.head.Commits++
	records := make([]store.StateRecord, 0, len(p.schemas)+len(p.indexes)+len(p.state))
	add := func(r store.StateRecord) {
		p.head.States++
		r.Version = p.head.States
		records = append(records, r)
	}
	for _, sw := range p.schemas {
		add(store.StateRecord{Space: store.SchemaSpace, Key: sw.Type, Value: sw.Raw})
	}
	for _, x := range p.indexes {
		r, err := x.StateRecord()
		if err != nil {
			return err
		}
		add(r)
	}
	for _, r := range p.state {
		add(r)
	}
	return j.commit(store.Batch{State: records, Head: p.head})
}

// progress tells hooks.Progress, if set, that events are in.
func (j *job) progress(events uint64) {
	if j.hooks.Progress != nil {
		j.hooks.Progress(events)
	}
}
