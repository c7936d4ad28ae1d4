package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// maxRetryDelay and maxReason are the service's bounds of a retry's delay
// and a park's reason.
const (
	maxRetryDelay = time.Hour
	maxReason     = 1024
)

// Consume consumes the subscription as the consumer name until ctx ends
// (it then returns ctx's error) or the stream is ended for good: by
// ErrConsumerReplaced, ErrSubscriptionDeleted, or a 4xx refusal of the
// stream (an *Error, e.g. ErrNotFound). It calls h once per delivery and
// settles the delivery by h's result; see the package documentation for
// the order, the batching of acknowledgements and the reconnection.
func (c *Client) Consume(ctx context.Context, subscription, name string, h Handler, opts ConsumeOptions) error {
	if h == nil {
		return errors.New("consumer: Consume needs a handler")
	}
	return c.consume(ctx, subscription, name, func(ctx context.Context, d Delivery) (Reaction, error) {
		return Reaction{}, h(ctx, d)
	}, opts)
}

// ConsumeReactions consumes as Consume does, writing the events that h
// returns together with the acknowledgement of their delivery in one
// write-events request (exactly-once reactions). A reaction refused with
// ErrNotHeld is dropped: the delivery's partition moved, and its new owner
// makes the reaction. A reaction refused for another reason (a failed
// precondition, an invalid event) retries the delivery as a plain handler
// error does; one that cannot reach the service is sent again while the
// delivery is held (a repeat of a write that did commit finds the
// delivery settled and writes nothing).
func (c *Client) ConsumeReactions(ctx context.Context, subscription, name string, h ReactionHandler, opts ConsumeOptions) error {
	if h == nil {
		return errors.New("consumer: ConsumeReactions needs a handler")
	}
	return c.consume(ctx, subscription, name, h, opts)
}

// consume opens stream after stream until ctx ends or one ends for good.
func (c *Client) consume(ctx context.Context, subscription, name string, h ReactionHandler, opts ConsumeOptions) error {
	o := opts.withDefaults()
	// Settles go on for ShutdownTimeout after ctx ends.
	settleCtx, cancelSettle := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSettle()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(o.ShutdownTimeout, cancelSettle) })
	defer stopGrace()

	failures := 0
	for {
		s := &session{c: c, sub: subscription, name: name, h: h, o: &o, stats: o.Stats, userCtx: ctx, settleCtx: settleCtx,
			sem: make(chan struct{}, o.Concurrency), kickc: make(chan struct{}, 1),
			workers: map[int]*worker{}, last: map[int]*worker{}}
		opened, err := s.run()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrConsumerReplaced) || errors.Is(err, ErrSubscriptionDeleted) || !transient(err) {
			return err
		}
		if opened {
			failures = 0
		}
		o.report(fmt.Errorf("consumer: %s as %s: %w (connecting again)", subscription, name, err))
		t := time.NewTimer(o.backoff(failures))
		failures++
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// backoff returns the delay after n failures in a row: ReconnectMin
// doubled n times, at most ReconnectMax, jittered between its half and
// itself.
func (o *ConsumeOptions) backoff(n int) time.Duration {
	return backoff(n, o.ReconnectMin, o.ReconnectMax)
}

// backoff returns the delay after n failures in a row: least doubled n
// times, at most most, jittered between its half and itself.
func backoff(n int, least, most time.Duration) time.Duration {
	d := least
	for i := 0; i < n && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	half := d / 2
	return half + rand.N(d-half+1)
}

// errStreamEnded and errDeadStream end a session that may be opened again.
var (
	errStreamEnded = errors.New("consume-subscription: the service ended the stream")
	errDeadStream  = errors.New("consume-subscription: no line within the heartbeat timeout, the connection is taken for dead")
)

// session is one consume stream with the workers of its partitions and
// its batch of acknowledgements.
type session struct {
	c         *Client
	sub, name string
	h         ReactionHandler
	o         *ConsumeOptions
	stats     *Stats
	userCtx   context.Context // Consume's
	settleCtx context.Context // outlives userCtx by the shutdown timeout

	handlerCtx  context.Context // ends with userCtx or the stream
	endHandlers context.CancelFunc

	sem   chan struct{} // a place per partition handled at once
	kickc chan struct{} // asks the acker to send what is gathered
	wg    sync.WaitGroup

	mu      sync.Mutex
	workers map[int]*worker // the partitions assigned now
	last    map[int]*worker // the latest worker of each partition, assigned now or not
	pending []pendingAck    // acknowledgements to send
	closing bool            // no more deliveries are handled
	ended   bool            // the stream ended: nothing is held any more
}

// worker handles the deliveries of one partition, one after the other,
// while the partition is assigned to the session.
type worker struct {
	partition int
	ctx       context.Context // ends when the partition moves, with the stream or with Consume
	cancel    context.CancelFunc
	wake      chan struct{}
	prev      *worker       // the partition's worker before, whose end this one awaits
	done      chan struct{} // closed when the worker returned

	// guarded by session.mu
	queue   []Delivery
	revoked bool
}

// signal wakes the worker up.
func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pendingAck is a token to acknowledge and the worker whose delivery it is.
type pendingAck struct {
	token string
	w     *worker
}

// run opens the stream and serves it until it ends or Consume's context
// does; opened reports whether the service accepted the stream.
func (s *session) run() (opened bool, err error) {
	streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(s.userCtx))
	defer cancelStream()
	// The service answers at once: an answer that takes longer than the
	// heartbeat timeout comes from a dead connection.
	stopOpening := context.AfterFunc(s.userCtx, cancelStream)
	var slow atomic.Bool
	openTimer := time.AfterFunc(s.o.HeartbeatTimeout, func() {
		slow.Store(true)
		cancelStream()
	})
	resp, err := s.c.open(streamCtx, "consume-subscription", struct {
		Subscription string `json:"subscription"`
		Consumer     string `json:"consumer"`
	}{s.sub, s.name})
	openTimer.Stop()
	if !stopOpening() || slow.Load() {
		if err == nil {
			resp.Body.Close()
		}
		if slow.Load() && s.userCtx.Err() == nil {
			return false, errDeadStream
		}
		return false, s.userCtx.Err()
	}
	if err != nil {
		return false, err
	}
	s.stats.Connects.Add(1)
	s.handlerCtx, s.endHandlers = context.WithCancel(s.userCtx)
	defer s.endHandlers()

	readerDone := make(chan error, 1)
	go func() { readerDone <- s.read(resp.Body, cancelStream) }()
	stopAcker, ackerDone := make(chan struct{}), make(chan struct{})
	go s.acker(stopAcker, ackerDone)

	select {
	case err = <-readerDone:
		// Nothing is held any more: drop what waits, end the handlers, and
		// wait for them, so that a partition coming back on the next stream
		// is handled by one worker at a time.
		s.mu.Lock()
		s.closing = true
		s.dropQueuesLocked()
		s.mu.Unlock()
		s.endHandlers()
		s.wg.Wait()
		close(stopAcker)
		<-ackerDone
		return true, err
	case <-s.userCtx.Done():
		// Finish what runs, settle it, and only then close the stream (its
		// end moves the partitions and makes every token stale).
		s.mu.Lock()
		s.closing = true
		s.dropQueuesLocked()
		s.mu.Unlock()
		s.wg.Wait()
		close(stopAcker)
		<-ackerDone
		cancelStream()
		<-readerDone
		return true, s.userCtx.Err()
	}
}

// read reads the stream's lines until it ends, and returns why.
func (s *session) read(body io.ReadCloser, cancelStream context.CancelFunc) error {
	defer body.Close()
	var dead atomic.Bool
	watchdog := time.AfterFunc(s.o.HeartbeatTimeout, func() {
		dead.Store(true)
		cancelStream()
	})
	defer watchdog.Stop()
	lines := newLineReader("consume-subscription", body)
	var err error
	for {
		var l line
		if l, err = lines.next(); err != nil {
			break
		}
		watchdog.Reset(s.o.HeartbeatTimeout)
		s.handleLine(l)
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	switch {
	case dead.Load():
		return errDeadStream
	case err == io.EOF:
		return errStreamEnded
	}
	return err
}

// handleLine acts on one line of the stream.
func (s *session) handleLine(l line) {
	switch l.Type {
	case "assignment":
		var a struct {
			Partitions []int `json:"partitions"`
		}
		if err := json.Unmarshal(l.Payload, &a); err != nil {
			s.o.report(fmt.Errorf("consumer: an assignment line is not JSON: %w", err))
			return
		}
		s.assign(a.Partitions)
	case "delivery":
		var d Delivery
		if err := json.Unmarshal(l.Payload, &d); err != nil {
			s.o.report(fmt.Errorf("consumer: a delivery line is not JSON: %w", err))
			return
		}
		s.stats.Deliveries.Add(1)
		d.extend = func(ctx context.Context, by time.Duration) error {
			res, err := s.c.InProgress(ctx, s.sub, by, d.Token)
			if err == nil && len(res.Stale) > 0 {
				err = ErrNotHeld
			}
			return err
		}
		s.enqueue(d)
	}
	// heartbeats, and line types of later versions, only show that the
	// stream is alive
}

// assign makes partitions the session's: the others are revoked.
func (s *session) assign(partitions []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[int]bool, len(partitions))
	for _, p := range partitions {
		keep[p] = true
	}
	for p, w := range s.workers {
		if !keep[p] {
			s.revokeLocked(w)
			delete(s.workers, p)
		}
	}
	if s.closing {
		return
	}
	for _, p := range partitions {
		if s.workers[p] == nil {
			s.startLocked(p)
		}
	}
}

// startLocked starts the worker of partition p.
func (s *session) startLocked(p int) *worker {
	ctx, cancel := context.WithCancel(s.handlerCtx)
	w := &worker{partition: p, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}), prev: s.last[p]}
	s.last[p], s.workers[p] = w, w
	s.wg.Add(1)
	go s.work(w)
	return w
}

// revokeLocked ends the hold of w's partition: its waiting deliveries and
// gathered acknowledgements are stale, dropped without a request.
func (s *session) revokeLocked(w *worker) {
	w.revoked = true
	dropped := len(w.queue)
	w.queue = nil
	kept := s.pending[:0]
	for _, a := range s.pending {
		if a.w == w {
			dropped++
		} else {
			kept = append(kept, a)
		}
	}
	clear(s.pending[len(kept):])
	s.pending = kept
	s.stats.Dropped.Add(int64(dropped))
	w.cancel()
	w.signal()
}

// dropQueuesLocked drops every delivery not yet handled.
func (s *session) dropQueuesLocked() {
	for _, w := range s.workers {
		s.stats.Dropped.Add(int64(len(w.queue)))
		w.queue = nil
		w.signal()
	}
}

// enqueue hands a delivery to its partition's worker.
func (s *session) enqueue(d Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		s.stats.Dropped.Add(1)
		return
	}
	w := s.workers[d.Partition]
	if w == nil { // a delivery ahead of its assignment: the service sends none
		w = s.startLocked(d.Partition)
	}
	w.queue = append(w.queue, d)
	w.signal()
}

// work handles w's deliveries in order until the partition is revoked or
// the session closes.
func (s *session) work(w *worker) {
	defer s.wg.Done()
	defer close(w.done)
	defer w.cancel()
	if w.prev != nil {
		<-w.prev.done // one worker per partition at a time
		w.prev = nil
	}
	for {
		d, ok := s.next(w)
		if !ok {
			return
		}
		select {
		case s.sem <- struct{}{}:
		case <-w.ctx.Done():
			s.stats.Dropped.Add(1)
			continue // next returns false
		}
		r, err := s.h(w.ctx, d)
		<-s.sem
		s.settle(w, d, r, err)
		s.mu.Lock()
		idle := len(w.queue) == 0
		s.mu.Unlock()
		if idle {
			s.kick() // a window of one should not wait for the interval
		}
	}
}

// next returns w's next delivery, waiting for one; false when w is done.
func (s *session) next(w *worker) (Delivery, bool) {
	for {
		s.mu.Lock()
		if w.revoked || s.closing || w.ctx.Err() != nil {
			s.stats.Dropped.Add(int64(len(w.queue)))
			w.queue = nil
			s.mu.Unlock()
			return Delivery{}, false
		}
		if len(w.queue) > 0 {
			d := w.queue[0]
			w.queue[0] = Delivery{}
			w.queue = w.queue[1:]
			s.mu.Unlock()
			return d, true
		}
		s.mu.Unlock()
		select {
		case <-w.wake:
		case <-w.ctx.Done():
		}
	}
}

// heldLocked reports whether w's deliveries are still this consumer's.
func (s *session) heldLocked(w *worker) bool { return !w.revoked && !s.ended }

func (s *session) held(w *worker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldLocked(w)
}

// settle settles d by the handler's result.
func (s *session) settle(w *worker, d Delivery, r Reaction, err error) {
	if err == nil && len(r.Events) == 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.heldLocked(w) {
			s.stats.Dropped.Add(1)
			return
		}
		s.pending = append(s.pending, pendingAck{d.Token, w})
		if len(s.pending) >= s.o.AckBatchSize {
			s.kick()
		}
		return
	}
	if err == nil {
		s.react(w, d, r)
		return
	}
	if errors.Is(err, ErrSettleLater) {
		s.stats.SettledLater.Add(1)
		return
	}
	if s.userCtx.Err() != nil || !s.held(w) {
		// Consume ends or the delivery moved: its next owner handles it.
		s.stats.Dropped.Add(1)
		return
	}
	var park *ParkError
	var retry *RetryError
	switch {
	case errors.As(err, &park):
		s.send(w, "park", d, &s.stats.Parked, func(ctx context.Context) (SettleResult, error) {
			return s.c.Park(ctx, s.sub, cut(park.Reason, maxReason), d.Token)
		})
	case errors.As(err, &retry):
		s.retry(w, d, retry.After)
	default:
		s.o.report(fmt.Errorf("consumer: %s: event %s (partition %d, attempt %d): %w", s.sub, d.Event.ID, d.Partition, d.Attempt, err))
		s.retry(w, d, s.o.RetryDelay(d.Attempt))
	}
}

// retry sends d again after the delay after.
func (s *session) retry(w *worker, d Delivery, after time.Duration) {
	after = min(max(after, 0), maxRetryDelay)
	s.send(w, "retry", d, &s.stats.Retried, func(ctx context.Context) (SettleResult, error) {
		return s.c.Retry(ctx, s.sub, after, d.Token)
	})
}

// send makes the settle request of one delivery, sending it again after a
// failure that may pass, while the delivery is held.
func (s *session) send(w *worker, what string, d Delivery, counter *atomic.Int64, request func(context.Context) (SettleResult, error)) {
	for failures := 0; ; failures++ {
		if !s.held(w) {
			s.stats.Dropped.Add(1)
			return
		}
		ctx, cancel := context.WithTimeout(s.settleCtx, s.o.RequestTimeout)
		res, err := request(ctx)
		cancel()
		if err == nil {
			counter.Add(int64(res.Settled))
			s.stats.Stale.Add(int64(len(res.Stale)))
			return
		}
		s.o.report(fmt.Errorf("consumer: %s: %s of event %s: %w", s.sub, what, d.Event.ID, err))
		if !transient(err) || !s.pause(w, s.o.backoff(failures)) {
			s.stats.Failed.Add(1)
			return
		}
	}
}

// react writes the reaction r to d together with d's acknowledgement.
func (s *session) react(w *worker, d Delivery, r Reaction) {
	for failures := 0; ; failures++ {
		if !s.held(w) {
			s.stats.Dropped.Add(1)
			return
		}
		ctx, cancel := context.WithTimeout(s.settleCtx, s.o.RequestTimeout)
		_, err := s.c.WriteEvents(ctx, r.Events, WriteOptions{Preconditions: r.Preconditions,
			Acknowledge: &Acknowledgement{Subscription: s.sub, Deliveries: []string{d.Token}}})
		cancel()
		switch {
		case err == nil:
			s.stats.Reactions.Add(1)
			s.stats.Acknowledged.Add(1)
			return
		case errors.Is(err, ErrNotHeld):
			s.stats.Stale.Add(1) // the partition's new owner reacts
			return
		case transient(err):
			s.o.report(fmt.Errorf("consumer: %s: the reaction to event %s: %w", s.sub, d.Event.ID, err))
			if !s.pause(w, s.o.backoff(failures)) {
				s.stats.Failed.Add(1)
				return
			}
		case s.settleCtx.Err() != nil:
			s.stats.Failed.Add(1)
			return
		default: // refused: as if the handler had failed
			s.o.report(fmt.Errorf("consumer: %s: the reaction to event %s was refused: %w", s.sub, d.Event.ID, err))
			s.retry(w, d, s.o.RetryDelay(d.Attempt))
			return
		}
	}
}

// pause waits d before a request is sent again; false when it must not
// be: the delivery is no longer held, or the shutdown's time is up.
func (s *session) pause(w *worker, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.settleCtx.Done():
		return false
	case <-w.ctx.Done():
		if !s.held(w) {
			return false
		}
		select { // Consume's context ended: go on within the shutdown's time
		case <-t.C:
			return true
		case <-s.settleCtx.Done():
			return false
		}
	}
}
