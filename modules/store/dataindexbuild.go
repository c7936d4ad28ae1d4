package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// A data index registered on a store that holds events is built in the
// background: the builder keys the events below the index's From, a chunk
// at a time, each chunk committed with the index's record moved on (Next)
// and fenced on the record's version, so that a build cut off by a crash
// goes on where its last commit left it, and no key is missing or keyed
// twice. On a shared backend every node's builder takes part: the fence
// lets one commit of each chunk through, and a node that dies leaves the
// rest to the others.

// buildChunk is how many events one commit of a build keys.
const buildChunk = 10_000

// buildRetry is how long the builder waits after a failed chunk.
const buildRetry = time.Second

// kickBuild wakes the builder.
func (s *Store) kickBuild() {
	select {
	case s.build <- struct{}{}:
	default:
	}
}

// builder builds the data indexes that are not ready, one chunk of one
// index at a time, until the store stops; kickBuild wakes it.
func (s *Store) builder() {
	defer close(s.built)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-s.build:
		}
		for s.buildNext(ctx) {
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// buildNext commits the next chunk of the first index that is not ready,
// and reports whether it did: whether there may be more to do. A failed
// chunk is tried again after buildRetry.
func (s *Store) buildNext(ctx context.Context) bool {
	for _, x := range s.dataIndexes.current().sorted {
		if x.Ready() {
			continue
		}
		err := s.buildChunkOf(ctx, x)
		var conflict *StateConflictError
		switch {
		case err == nil, errors.As(err, &conflict): // another node built it, or it was removed
			return true
		case ctx.Err() != nil, errors.Is(err, ErrClosed), errors.Is(err, ErrReadOnly):
			return false
		}
		s.log.Warn("data index build failed, trying again", zap.String("dataIndex", x.Name), zap.Error(err))
		time.AfterFunc(buildRetry, s.kickBuild)
		return false
	}
	return false
}

// buildChunkOf keys the next chunk of the events below the From of the
// index known as known, as stored, and commits them with its Next moved on.
// An index that another node removed or finished (which this store has not
// followed yet) is taken as stored.
func (s *Store) buildChunkOf(ctx context.Context, known *DataIndex) error {
	name := known.Name
	r, found, err := s.backend.State(DataIndexSpace, name)
	if err != nil {
		return err
	}
	if !found {
		s.dataIndexes.replaceIf(known.ID, nil, []string{name})
		return nil
	}
	x, err := decodeDataIndex(r)
	if err != nil {
		return err
	}
	if x.Ready() || x.ID != known.ID {
		s.dataIndexes.replaceIf(known.ID, []*DataIndex{x}, nil)
		return nil
	}
	to := min(x.Next+buildChunk, x.From)
	backfill, err := x.Postings(s.backend, x.Next, to)
	if err != nil {
		return err
	}
	next := *x
	next.Next = to
	value, err := json.Marshal(&next)
	if err != nil {
		return err
	}
	_, err = s.Commit(ctx, Request{
		Changes:  []Change{{Space: DataIndexSpace, Key: name, Value: value, Expect: r.Version}},
		backfill: backfill,
		Applied:  func() { s.dataIndexes.replace([]*DataIndex{&next}, nil) },
	})
	return err
}

// Postings returns the postings of x for the events from..to-1 of r, in
// id order: what a build of them commits (Batch.Backfill).
func (x *DataIndex) Postings(r Reader, from, to uint64) ([]Posting, error) {
	if from >= to {
		return nil, nil
	}
	var out []Posting
	var keys []dataindex.Key
	sc := jsonscan.New(nil)
	it := r.Scan(Scan{From: from, To: to - 1})
	for it.Next() {
		rec := it.Record()
		m, eventType, err := splitTyped(rec, sc)
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("data index %s: event %d: %w", x.Name, rec.ID, err)
		}
		out, keys = appendPostings(out, x, rec.ID, eventType, m[event.MemberData], keys)
	}
	return out, it.Close()
}
