package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Fill writes n events on subject in batches of 1,000, interleaved with as
// many events on other subjects, so that reading subject skips over them.
func (t Target) Fill(ctx context.Context, subject string, n int) error {
	own, other := writeBody(subject, EventType, 1000), writeBody(subject+"-neighbour", EventType, 1000)
	return t.fill(ctx, (n+999)/1000, 1, func(int) [][]byte { return [][]byte{own, other} })
}

// RareEventType is the type of the events the query scenario selects.
const RareEventType = "io.eventstore.bench.flagged"

// FillMixed writes n events below prefix in batches of 1,000: one in a
// hundred of RareEventType on prefix/rare, the others of EventType, each
// batch on a subject prefix/common/<batch> of its own.
func (t Target) FillMixed(ctx context.Context, prefix string, n int) error {
	return t.fill(ctx, (n+999)/1000, 1, func(batch int) [][]byte {
		common := fmt.Sprintf("%s/common/%d", prefix, batch)
		return [][]byte{batchBody(1000, func(i int) (string, string) {
			if i%100 == 99 {
				return prefix + "/rare", RareEventType
			}
			return common, EventType
		})}
	})
}

// fill posts the bodies of every batch to write-events, with workers
// clients at once, each taking the next batch; it stops at the first error.
func (t Target) fill(ctx context.Context, batches, workers int, bodies func(batch int) [][]byte) error {
	client := newClient(workers)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := int(next.Add(1) - 1); batch < batches && ctx.Err() == nil; batch = int(next.Add(1) - 1) {
				for _, body := range bodies(batch) {
					if err := t.call(ctx, client, "/api/v1/write-events", body, nil); err != nil {
						once.Do(func() { first = fmt.Errorf("fill, batch %d: %w", batch, err); cancel() })
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// PrefillSubjects is the number of subjects Prefill spreads n events over:
// a hundred events each, as in a store of many small streams.
func PrefillSubjects(n int) int { return max(1, n/100) }

// Prefill writes n events in batches of 1,000 with four clients at once,
// event k on subject /bench/prefill/<run>/<k mod PrefillSubjects(n)>, so
// that every batch touches many subjects and each subject's events are
// spread over the whole log.
func (t Target) Prefill(ctx context.Context, n int) error {
	prefix := fmt.Sprintf("/bench/prefill/%d/", time.Now().UnixNano())
	subjects := PrefillSubjects(n)
	return t.fill(ctx, (n+999)/1000, 4, func(batch int) [][]byte {
		first := batch * 1000
		return [][]byte{batchBody(min(1000, n-first), func(i int) (string, string) {
			return prefix + strconv.Itoa((first+i)%subjects), EventType
		})}
	})
}
