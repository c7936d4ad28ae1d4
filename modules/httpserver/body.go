package httpserver

import (
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// Answers to a request body that does not arrive in time (docs/api.md §1.5).
var (
	// ErrBodyStalled answers a body that paused longer than the idle limit.
	ErrBodyStalled = &httpkit.Error{Status: http.StatusRequestTimeout, Message: "request timeout: the request body stalled"}
	// ErrBodyTooSlow answers a body that took longer than the total limit.
	ErrBodyTooSlow = &httpkit.Error{Status: http.StatusRequestTimeout, Message: "request timeout: the request body took too long"}
)

// BodyTimes are the time limits of request bodies.
type BodyTimes struct {
	// Idle is the longest pause between bytes of a body.
	Idle time.Duration
	// Total is the longest time to receive a whole body; 0 for none.
	Total time.Duration
}

// timedBody reads a request body within its time limits by moving the read
// deadline of the request before each read: the next bytes must come
// within the idle limit, all of them by the total deadline, and none after
// the service cut the body off (shutdown). A read that misses a deadline
// fails with the answer the client gets.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time // the total deadline; zero for none

	// quietUntil is the time (Unix nanoseconds) up to which a read needs
	// no new deadline: the one set last holds for it. Read checks it
	// without the lock.
	quietUntil atomic.Int64

	mu       sync.Mutex // orders setting the deadline against cut
	cutAt    time.Time  // when set, no read outlasts it
	deadline time.Time  // the deadline set last
	missed   error      // the answer to it
}

// deadlineSlack is how much longer than the idle limit a pause may last
// (at most a quarter of the limit): the deadline is set that much later and
// moves on only once it is due within the limit, since setting it costs as
// much as a small read; so the reads of a body that arrives at once set it
// once.
const deadlineSlack = time.Second

// newTimedBody limits the body of r, whose request started at start, and
// sets the first read deadline at once: the server reads what a handler
// left of a body under it too.
func newTimedBody(r *http.Request, rc *http.ResponseController, limits BodyTimes, start time.Time) *timedBody {
	b := &timedBody{ReadCloser: r.Body, rc: rc, idle: limits.Idle}
	if limits.Total > 0 {
		b.end = start.Add(limits.Total)
	}
	b.setDeadline(start)
	return b
}

// Read reads within the limits.
func (b *timedBody) Read(p []byte) (int, error) {
	if now := time.Now(); now.UnixNano() > b.quietUntil.Load() {
		b.setDeadline(now)
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.mu.Lock()
		err = b.missed
		b.mu.Unlock()
	}
	return n, err
}

// setDeadline gives the next read at least the idle limit from now,
// within the total deadline and the cut.
func (b *timedBody) setDeadline(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	due := now.Add(b.idle)
	deadline, missed := due.Add(min(deadlineSlack, b.idle/4)), error(ErrBodyStalled)
	if !b.end.IsZero() && b.end.Before(deadline) {
		deadline, missed = b.end, ErrBodyTooSlow
	}
	if !b.cutAt.IsZero() && b.cutAt.Before(deadline) {
		deadline, missed = b.cutAt, httpkit.ErrShuttingDown
	}
	if due.After(deadline) {
		due = deadline // the total limit or the cut comes first
	}
	if missed == b.missed && !b.deadline.Before(due) {
		return // the deadline set last still holds
	}
	b.deadline, b.missed = deadline, missed
	b.quietUntil.Store(b.quietAfter())
	_ = b.rc.SetReadDeadline(deadline)
}

// quietAfter returns until when the deadline set last holds for a read:
// for good when it is the total deadline or the cut, else while the idle
// limit from the read's start ends before it.
func (b *timedBody) quietAfter() int64 {
	if b.missed != ErrBodyStalled {
		return math.MaxInt64
	}
	return b.deadline.Add(-b.idle).UnixNano()
}

// cut ends the reads of the body at t, also one waiting now.
func (b *timedBody) cut(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cutAt, b.deadline, b.missed = t, t, httpkit.ErrShuttingDown
	b.quietUntil.Store(b.quietAfter())
	_ = b.rc.SetReadDeadline(t)
}

// bodies are the request bodies being read, so that the stop phase can cut
// them off: a client that sends its body slowly or not at all must not hold
// the shutdown up.
type bodies struct {
	mu   sync.Mutex
	open map[*timedBody]struct{}
	cut  time.Time // set once the stop phase began: new bodies get it at once
}

func newBodies() *bodies { return &bodies{open: map[*timedBody]struct{}{}} }

// add tracks b until remove; once the stop phase began, b is cut at once.
func (bs *bodies) add(b *timedBody) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if !bs.cut.IsZero() {
		b.cut(bs.cut)
	}
	bs.open[b] = struct{}{}
}

// remove ends the tracking of b.
func (bs *bodies) remove(b *timedBody) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.open, b)
}

// cutAll ends the reads of every body, those to come included, at t.
func (bs *bodies) cutAll(t time.Time) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.cut = t
	for b := range bs.open {
		b.cut(t)
	}
}
