package store

import (
	"context"
	"fmt"
	"math"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// IndexVerifier is implemented by backends that can check their indexes
// during Verify: CheckEvent is called for every event in id order, Finish
// once at the end.
type IndexVerifier interface {
	CheckEvent(id uint64, subject, eventType string) error
	Finish() error
}

// Verify checks a whole store offline: ids contiguous from 0, every hash
// recomputed, every predecessor link, strictly increasing times, every event
// of a type with a schema against it, the head, and the backend's indexes if
// it implements IndexVerifier. It returns the
// number of events and the first problem found as a *CorruptionError.
func Verify(ctx context.Context, b Backend) (uint64, error) {
	head, err := b.Head()
	if err != nil {
		return 0, err
	}
	stored, err := b.Schemas()
	if err != nil {
		return 0, err
	}
	schemas := make(map[string]*schema.Schema, len(stored))
	for _, sw := range stored {
		if schemas[sw.Type], err = schema.Compile(sw.Raw); err != nil {
			return 0, corruption("stored schema of %s: %v", sw.Type, err)
		}
	}
	it := b.Scan(Scan{Subject: "/", Recursive: true, From: 0, To: math.MaxUint64})
	defer it.Close()
	indexes, _ := b.(IndexVerifier)
	var (
		n        uint64
		prevHash = event.ZeroHash
		prevTime string
	)
	for it.Next() {
		if n%4096 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		r := it.Record()
		if r.ID != n {
			return n, corruption("event %d is missing (next stored id is %d)", n, r.ID)
		}
		f, err := event.Decode(r)
		if err != nil {
			return n, corruption("event %d: %v", n, err)
		}
		if err := f.Verify(); err != nil {
			return n, corruption("event %d: %v", n, err)
		}
		if f.PredecessorHash != prevHash {
			return n, corruption("event %d links to %s, not to the hash %s of event %d", n, f.PredecessorHash, prevHash, int64(n)-1)
		}
		if f.Time <= prevTime { // same fixed-width format: string order is time order
			return n, corruption("event %d has time %s, not after %s", n, f.Time, prevTime)
		}
		if sch := schemas[f.Type]; sch != nil {
			if err := sch.Validate(f.Data); err != nil {
				return n, corruption("event %d does not match the schema of %s: %v", n, f.Type, err)
			}
		}
		if indexes != nil {
			if err := indexes.CheckEvent(n, f.Subject, f.Type); err != nil {
				return n, err
			}
		}
		prevHash, prevTime = f.Hash, f.Time
		n++
	}
	if err := it.Close(); err != nil {
		return n, fmt.Errorf("read event %d: %w", n, err)
	}
	if head.Count != n || head.LastHash != prevHash {
		return n, corruption("head says %d events ending in %s, the log has %d ending in %s", head.Count, head.LastHash, n, prevHash)
	}
	if indexes != nil {
		if err := indexes.Finish(); err != nil {
			return n, err
		}
	}
	return n, nil
}
