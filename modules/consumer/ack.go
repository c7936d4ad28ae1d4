package consumer

import (
	"context"
	"fmt"
	"time"
)

// kick asks the acker to send what is gathered.
func (s *session) kick() {
	select {
	case s.kickc <- struct{}{}:
	default:
	}
}

// acker sends the gathered acknowledgements when kicked, every
// AckInterval, and a last time when stopped.
func (s *session) acker(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(s.o.AckInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.kickc:
		case <-tick.C:
		case <-stop:
			s.flush(true)
			return
		}
		s.flush(false)
	}
}

// flush sends the acknowledgements gathered when it is called, in batches
// of AckBatchSize; those that gather meanwhile wait for the next flush, so
// that they make a batch while a request is under way. A batch that fails
// in a way that may pass is put back, to be sent at the next flush; the
// last flush sends everything and tries again within the shutdown's time.
func (s *session) flush(last bool) {
	s.mu.Lock()
	due := len(s.pending)
	s.mu.Unlock()
	for failures := 0; ; {
		s.mu.Lock()
		if s.ended { // every token is stale
			s.stats.Dropped.Add(int64(len(s.pending)))
			s.pending = nil
			s.mu.Unlock()
			return
		}
		n := min(len(s.pending), s.o.AckBatchSize)
		if !last {
			n = min(n, due)
		}
		if n == 0 {
			s.mu.Unlock()
			return
		}
		due -= n
		batch := s.pending[:n:n]
		s.pending = append([]pendingAck(nil), s.pending[n:]...)
		s.mu.Unlock()

		tokens := make([]string, n)
		for i, a := range batch {
			tokens[i] = a.token
		}
		ctx, cancel := context.WithTimeout(s.settleCtx, s.o.RequestTimeout)
		res, err := s.c.Acknowledge(ctx, s.sub, tokens...)
		cancel()
		if err == nil {
			s.stats.Acknowledged.Add(int64(res.Settled))
			s.stats.Stale.Add(int64(len(res.Stale)))
			failures = 0
			continue
		}
		s.o.report(fmt.Errorf("consumer: %s: acknowledging %d deliveries: %w", s.sub, n, err))
		if !transient(err) || s.settleCtx.Err() != nil {
			s.stats.Failed.Add(int64(n))
			continue
		}
		s.mu.Lock()
		var back []pendingAck
		for _, a := range batch {
			if s.heldLocked(a.w) {
				back = append(back, a)
			} else {
				s.stats.Dropped.Add(1)
			}
		}
		s.pending = append(back, s.pending...)
		s.mu.Unlock()
		if !last {
			return
		}
		t := time.NewTimer(s.o.backoff(failures))
		failures++
		select {
		case <-t.C:
		case <-s.settleCtx.Done():
			t.Stop()
		}
	}
}

// cut returns s cut to at most n bytes, on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // a continuation byte
		n--
	}
	return s[:n]
}
