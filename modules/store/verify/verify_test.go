package verify_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// The library's helpers, under the names these tests use.
const lib = storetest.Lib

var (
	candidate = storetest.Candidate
	write     = storetest.Write
)

// TestVerifyWhileWriting verifies the store again and again while writers
// write to it: each verification checks exactly the durable snapshot at its
// start, whose head it returns, and finds it intact, although the log and
// the index postings grow meanwhile.
func TestVerifyWhileWriting(t *testing.T) {
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, s)
	for range 10 {
		batch := make([]event.Candidate, 500)
		for i := range batch {
			batch[i] = candidate(fmt.Sprintf("/a/%d", i%4), lib+"x", `{}`)
		}
		write(t, s, batch...)
	}
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		written atomic.Int64
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				batch := make([]event.Candidate, 1+i%50)
				for j := range batch {
					batch[j] = candidate(fmt.Sprintf("/a/%d/%d", w, j%3), lib+"y", `{"n":1}`)
				}
				if _, err := s.Write(context.Background(), batch, nil); err != nil {
					t.Error(err)
					return
				}
				written.Add(int64(len(batch)))
			}
		})
	}
	var last uint64
	for range 5 {
		head, n, err := verify.Online(context.Background(), s, nil)
		if err != nil || n != head.Count || head.Count < last {
			t.Fatalf("verify while writing: %d of %d events, %v (a snapshot before had %d)", n, head.Count, err, last)
		}
		it := s.Scan(store.Scan{Subject: "/", Recursive: true, From: head.Count - 1, To: head.Count - 1})
		if !it.Next() || it.Record().Hash() != head.LastHash {
			t.Fatalf("the snapshot's head hash %s is not that of event %d", head.LastHash, head.Count-1)
		}
		it.Close()
		last = head.Count
	}
	stop.Store(true)
	wg.Wait()
	if written.Load() == 0 || last <= 5000 {
		t.Fatalf("the writers wrote %d events, the last snapshot had %d", written.Load(), last)
	}
	if head, n, err := verify.Online(context.Background(), s, nil); err != nil || n != s.Durable() || head.Count != n {
		t.Fatalf("verify after the writes: %d events of %d, %v", n, s.Durable(), err)
	}
}
