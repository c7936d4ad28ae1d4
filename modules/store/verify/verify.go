package verify

import (
	"context"
	"fmt"
	"math"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Options shape a verification.
type Options struct {
	// Head, unless nil, is the snapshot to verify: the events below
	// Head.Count, the last of them hashing to Head.LastHash; events beyond it
	// are left alone. Nil verifies the backend's head, and that no event
	// lies beyond it.
	Head *store.Head
	// Progress, unless nil, learns the number of events checked so far,
	// after every chunk of ids (see chunkIDs), from the calling goroutine.
	Progress func(checked uint64)
	// Workers is the number of goroutines that check events in parallel;
	// 0 is GOMAXPROCS.
	Workers int
}

// Verify checks a whole store: ids contiguous from 0, every hash
// recomputed, every predecessor link, strictly increasing times, every event
// of a type with a schema against it, the head, the backend's indexes if it
// is IndexVerifiable, and the keys of its data indexes (dataCheck). It returns the number of events checked and the
// first problem, that of the lowest id, as a *CorruptionError.
//
// Workers read and check chunks of events on their own (decoding,
// hashing, schema), and the calling goroutine checks what joins them (ids,
// links, times, indexes) in id order: memory stays within a few chunks
// however large the store.
func Verify(ctx context.Context, b store.Backend, opts Options) (uint64, error) {
	head, to := opts.Head, uint64(math.MaxUint64)
	if head == nil {
		h, err := b.Head()
		if err != nil {
			return 0, err
		}
		head = &h
	} else if head.Count > 0 {
		to = head.Count - 1
	}
	types, schemas, err := store.ReadSchemas(b)
	if err != nil {
		return 0, err
	}
	if err := compileAll(types, schemas); err != nil {
		return 0, err
	}
	var indexes store.IndexVerifier
	if v, ok := b.(store.IndexVerifiable); ok {
		indexes = v.NewIndexVerifier()
	}
	data, err := newDataCheck(b)
	if err != nil {
		return 0, err
	}
	chain := &chainCheck{indexes: indexes, progress: opts.Progress, prevHash: []byte(event.ZeroHash)}
	if opts.Head == nil || head.Count > 0 {
		if err := runPipeline(ctx, b, to, schemas, data, opts.Workers, chain); err != nil {
			return chain.n, err
		}
	}
	if n, last := chain.n, string(chain.prevHash); head.Count != n || head.LastHash != last {
		return n, corruption("head says %d events ending in %s, the log has %d ending in %s", head.Count, head.LastHash, n, last)
	}
	if indexes != nil {
		if err := indexes.Finish(); err != nil {
			return chain.n, err
		}
	}
	if data != nil {
		if err := data.finish(b, chain.n); err != nil {
			return chain.n, err
		}
	}
	return chain.n, nil
}

// compileAll compiles every schema, in the order of types, so that a
// verification proves also the schemas no event uses; the first that does
// not compile is a *CorruptionError.
func compileAll(types []string, schemas map[string]*schema.Schema) error {
	for _, t := range types {
		if err := schemas[t].Check(); err != nil {
			return corruption("stored schema of %s: %v", t, err)
		}
	}
	return nil
}

// Online checks the durable snapshot of s at the call, as Verify does,
// while the store goes on serving and writing: the events below the
// durable head, ending in its hash, and the indexes as far as they hold
// them. It returns the snapshot's head and the number of events checked.
func Online(ctx context.Context, s *store.Store, progress func(checked uint64)) (store.Head, uint64, error) {
	head := s.DurableHead()
	n, err := Verify(ctx, s.Backend(), Options{Head: &head, Progress: progress})
	return head, n, err
}

// corruption returns a *store.CorruptionError.
func corruption(format string, args ...any) error {
	return &store.CorruptionError{Detail: fmt.Sprintf(format, args...)}
}
