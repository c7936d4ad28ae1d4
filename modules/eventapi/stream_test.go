package eventapi

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// testStream returns a stream into a recorder, with batch as its
// connection's write batch unless nil, and the function that cancels its
// request context.
func testStream(stopping <-chan struct{}, batch httpkit.WriteBatch) (*lineStream, *httptest.ResponseRecorder, context.CancelFunc) {
	rec := httptest.NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("POST", "/", nil)
	if batch != nil {
		r = r.WithContext(httpkit.WithWriteBatch(ctx, batch))
	}
	return &lineStream{Stream: httpkit.StartStream(rec, r), ctx: ctx, stopping: stopping}, rec, cancel
}

// produceLines puts n numbered lines tagged with their numbers, and
// reports on returned when it returns.
func produceLines(n int, returned *bool) func(context.Context, putFunc) error {
	return func(_ context.Context, put putFunc) error {
		defer func() { *returned = true }()
		for i := 0; i < n; i++ {
			if err := put(uint64(i), []byte(fmt.Sprintf(`{"type":"row","payload":%d}`+"\n", i))); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestPumpWritesEveryLineInOrderAndReusesItsPipe(t *testing.T) {
	p := newLinePipe()
	for round := 0; round < 40; round++ {
		s, rec, cancel := testStream(nil, nil)
		var returned bool
		var tags []uint64
		produced, ended := s.pump(p, produceLines(5000, &returned), false, func(tag uint64) {
			tags = append(tags, tag)
			if round%2 == 1 && len(tags) == 300 {
				cancel() // a client that leaves early
			}
		})
		cancel()
		if !returned {
			t.Fatalf("round %d: pump returned before the producer", round)
		}
		lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
		if round%2 == 1 {
			if !errors.Is(ended, context.Canceled) || len(tags) != 300 || len(lines) != 300 {
				t.Fatalf("round %d, client gone: ended %v after %d lines (%d written)", round, ended, len(tags), len(lines))
			}
			continue
		}
		if produced != nil || ended != nil || len(tags) != 5000 || len(lines) != 5000 {
			t.Fatalf("round %d: produced %v, ended %v, %d tags, %d lines", round, produced, ended, len(tags), len(lines))
		}
		for i, line := range lines {
			if tags[i] != uint64(i) || line != fmt.Sprintf(`{"type":"row","payload":%d}`, i) {
				t.Fatalf("round %d, line %d: tag %d, %s", round, i, tags[i], line)
			}
		}
	}
	if cap(p.pending.buf)+cap(p.spare.buf) == 0 {
		t.Fatal("the pipe kept no buffer for the next stream")
	}
}

func TestPumpEndsWithTheShutdownLineWhenTheServiceStops(t *testing.T) {
	stopping := make(chan struct{})
	s, rec, cancel := testStream(stopping, nil)
	defer cancel()
	var returned bool
	produce := func(ctx context.Context, put putFunc) error {
		defer func() { returned = true }()
		if err := put(0, []byte(`{"type":"row","payload":1}`+"\n")); err != nil {
			return err
		}
		close(stopping)
		<-ctx.Done() // a producer that only ends when cancelled
		return ctx.Err()
	}
	_, ended := s.pump(newLinePipe(), produce, true, nil)
	if !errors.Is(ended, errStopped) || !returned {
		t.Fatalf("ended %v, producer returned %v", ended, returned)
	}
	if !strings.HasSuffix(rec.Body.String(), `{"type":"error","payload":{"error":"service unavailable: shutting down"}}`+"\n") {
		t.Fatalf("stream: %q", rec.Body.String())
	}
}

func TestPumpSendsHeartbeatsOnlyWhenAsked(t *testing.T) {
	for _, heartbeats := range []bool{true, false} {
		s, rec, cancel := testStream(nil, nil)
		slow := func(_ context.Context, put putFunc) error {
			time.Sleep(HeartbeatInterval + 300*time.Millisecond)
			return put(0, []byte(`{"type":"row","payload":1}`+"\n"))
		}
		produced, ended := s.pump(newLinePipe(), slow, heartbeats, nil)
		cancel()
		want := `{"type":"row","payload":1}` + "\n"
		if heartbeats {
			want = `{"type":"heartbeat","payload":{}}` + "\n" + want
		}
		if produced != nil || ended != nil || rec.Body.String() != want {
			t.Fatalf("heartbeats %v: produced %v, ended %v, stream %q", heartbeats, produced, ended, rec.Body.String())
		}
	}
}

func TestPacerLeavesAThirdOfTheProcessor(t *testing.T) {
	p := newPacer()
	work := time.Now()
	for time.Since(work) < 30*time.Millisecond { // a stretch of work
	}
	start := time.Now()
	p.pace()
	if waited := time.Since(start); waited < 12*time.Millisecond {
		t.Fatalf("after 30 ms of work the pacer waited %v, want about 15 ms", waited)
	}
	start = time.Now()
	p.pace() // no work since: no wait
	if waited := time.Since(start); waited > 5*time.Millisecond {
		t.Fatalf("with no work since, the pacer waited %v", waited)
	}
}

// countingBatch is a write batch that counts its releases; the lines reach
// the recorder at once.
type countingBatch struct {
	mu       sync.Mutex
	holding  bool
	releases int
}

func (b *countingBatch) Hold()        { b.mu.Lock(); b.holding = true; b.mu.Unlock() }
func (b *countingBatch) Held() int    { return 0 }
func (b *countingBatch) Flush() error { return nil }

func (b *countingBatch) Release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holding, b.releases = false, b.releases+1
	return nil
}

// sent tells whether n batches went out and none is being held.
func (b *countingBatch) sent(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.holding && b.releases >= n
}

func TestPumpSendsItsLinesBeforeWaitingForMore(t *testing.T) {
	batch := &countingBatch{}
	s, rec, cancel := testStream(nil, batch)
	defer cancel()
	produce := func(_ context.Context, put putFunc) error {
		for i := 0; i < 3; i++ {
			if err := put(uint64(i), []byte(fmt.Sprintf(`{"type":"row","payload":%d}`+"\n", i))); err != nil {
				return err
			}
			// A producer that takes its time: what it put must be sent
			// meanwhile, not held for a fuller batch.
			for deadline := time.Now().Add(5 * time.Second); !batch.sent(i + 1); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					return fmt.Errorf("line %d still held back", i)
				}
			}
		}
		return nil
	}
	produced, ended := s.pump(newLinePipe(), produce, false, nil)
	if produced != nil || ended != nil || strings.Count(rec.Body.String(), "\n") != 3 {
		t.Fatalf("produced %v, ended %v, stream %q", produced, ended, rec.Body.String())
	}
}
