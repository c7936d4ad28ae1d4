package eventapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// HeartbeatInterval is the idle time after which a stream sends a heartbeat.
const HeartbeatInterval = time.Second

// errStopped ends a stream when the service stops, after its final error
// line.
var errStopped = errors.New("service stopping")

// lineStream is the NDJSON response of one request with the two reasons it
// may have to end early: the client leaving (the request's context) and the
// service stopping. Every line goes through send, which checks both.
type lineStream struct {
	*httpkit.Stream
	ctx context.Context
	// stopping is closed when the stream must end early: the service
	// stops, or its token expired or was revoked (ending's cause says
	// which).
	stopping <-chan struct{}
	ending   context.Context
	release  context.CancelCauseFunc // of ending
	unwatch  func() bool             // ends the watch for the stop
	untoken  func()                  // ends the watch of the token (auth.Watch)
	buf      []byte                  // scratch of line
}

// startStream sends the stream's status and headers. From the stop on, a
// write that has not reached the client within httpkit.StopGrace gives up,
// so a client that stopped reading cannot hold the shutdown. The handler
// must call end when it is done with the stream.
func (a *API) startStream(w http.ResponseWriter, r *http.Request) *lineStream {
	ending, end := context.WithCancelCause(a.stopping)
	s := &lineStream{Stream: httpkit.StartStream(w, r), ctx: r.Context(), stopping: ending.Done(), ending: ending, release: end}
	s.unwatch = context.AfterFunc(a.stopping, func() { s.EndBy(time.Now().Add(httpkit.StopGrace)) })
	s.untoken = auth.Watch(r.Context(), end)
	return s
}

// end releases the stream when its handler is done.
func (s *lineStream) end() {
	s.unwatch()
	s.untoken()
	s.release(nil)
	s.Finish()
}

// endEarly writes the error line of why the stream ends before its time
// (stopping was closed): its token expired or was revoked, or the service
// stops.
func (s *lineStream) endEarly() {
	if s.ending != nil {
		if cause := context.Cause(s.ending); errors.Is(cause, auth.ErrTokenRevoked) || errors.Is(cause, auth.ErrTokenExpired) {
			s.Error(cause.Error())
			return
		}
	}
	s.Error(httpkit.ErrShuttingDown.Message)
}

// send writes one complete line (ending in a newline). It fails with the
// client's error when the client is gone or too slow, and with errStopped,
// after the final error line, when the service stops.
func (s *lineStream) send(line []byte) error {
	select {
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-s.stopping:
		s.endEarly()
		return errStopped
	default:
	}
	return s.WriteLine(line)
}

// line sends the line {"type":lineType,"payload":payload}.
func (s *lineStream) line(lineType string, payload []byte) error {
	s.buf = httpkit.AppendLine(s.buf[:0], lineType, payload)
	return s.send(s.buf)
}

// heartbeat sends a heartbeat line.
func (s *lineStream) heartbeat() error { return s.line("heartbeat", []byte("{}")) }

// LineStream is the NDJSON answer of a route of another package (the
// operations endpoints), written as the event streams are: every line goes
// through the checks for the client leaving and the service stopping.
type LineStream struct {
	stream *lineStream
}

// StartLineStream sends the status and headers of the NDJSON answer to r.
// The handler must call End when it is done with the stream.
func (a *API) StartLineStream(w http.ResponseWriter, r *http.Request) *LineStream {
	return &LineStream{stream: a.startStream(w, r)}
}

// Produce runs produce in a goroutine of its own and writes every complete
// line (ending in a newline) it puts, and a heartbeat line after each idle
// HeartbeatInterval. It returns once produce has returned: ended is nil
// when every line was written, then produced is what produce returned;
// otherwise ended tells why the stream stopped early (the client left, or
// the service stops and the final error line is written) and produce's
// context was cancelled.
func (l *LineStream) Produce(produce func(ctx context.Context, put func(line []byte) error) error) (produced, ended error) {
	return l.stream.pump(newLinePipe(), func(ctx context.Context, put putFunc) error {
		return produce(ctx, func(line []byte) error { return put(0, line) })
	}, true, nil)
}

// Error writes the final error line of the stream.
func (l *LineStream) Error(message string) { l.stream.Error(message) }

// End releases the stream.
func (l *LineStream) End() { l.stream.end() }

// putFunc hands one complete line with a tag (an event id, or 0) to the
// goroutine that writes the stream; the line may be reused once it returns.
type putFunc func(tag uint64, line []byte) error

// pump runs produce in a goroutine of its own and writes the lines it puts
// while it goes on producing, so that producing (storage, evaluation) and
// the network work in parallel. With heartbeats, a heartbeat line goes out
// after each idle HeartbeatInterval. sent, unless nil, learns the tag of
// every line written.
//
// It returns once produce has returned: ended is nil when every line was
// written, then produced is what produce returned; otherwise ended tells
// why the stream stopped early (errStopped or the client's error) and
// produce's context was cancelled.
func (s *lineStream) pump(p *linePipe, produce func(ctx context.Context, put putFunc) error, heartbeats bool, sent func(tag uint64)) (produced, ended error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	p.start()
	go func() {
		defer close(p.done)
		p.err = produce(ctx, func(tag uint64, line []byte) error { return p.put(ctx, tag, line) })
	}()
	stop := func(why error) error {
		cancel()
		<-p.done
		return why
	}

	var (
		timer *time.Timer
		tick  <-chan time.Time
	)
	if heartbeats {
		timer = time.NewTimer(HeartbeatInterval)
		defer timer.Stop()
		tick = timer.C
	}
	active := func() {
		if timer != nil {
			timer.Reset(HeartbeatInterval)
		}
	}
	for {
		select {
		case <-p.ready:
			if err := p.write(s, sent); err != nil {
				return nil, stop(err)
			}
			active()
		case <-tick:
			if err := s.heartbeat(); err != nil {
				return nil, stop(err)
			}
			active()
		case <-s.stopping:
			s.endEarly()
			return nil, stop(errStopped)
		case <-p.done:
			if err := p.write(s, sent); err != nil {
				return nil, err
			}
			return p.err, nil
		}
	}
}

// pipeBytes bounds the lines a producer may have ready while the client
// reads slowly; the producer waits beyond it.
const pipeBytes = 256 << 10

// lineBatch holds complete lines one after the other, with a tag each.
type lineBatch struct {
	buf  []byte
	ends []int // end offset of each line in buf
	tags []uint64
}

func (b *lineBatch) reset() { b.buf, b.ends, b.tags = b.buf[:0], b.ends[:0], b.tags[:0] }

// linePipe carries lines from a producer goroutine to the goroutine that
// writes them. Lines gather in a pending batch that the writer takes whole
// whenever it is free, so a line goes out as soon as the writer can take
// it and the producer runs on while the writer waits for the network. A
// stream keeps one pipe and reuses its two batches for every pump.
type linePipe struct {
	mu      sync.Mutex
	pending lineBatch     // complete lines not yet taken
	spare   lineBatch     // the batch the writer gave back
	ready   chan struct{} // signalled when pending has lines
	room    chan struct{} // signalled when pending was taken
	done    chan struct{} // closed when the producer returned
	err     error         // what the producer returned
}

func newLinePipe() *linePipe {
	return &linePipe{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// start prepares the pipe for a new producer.
func (p *linePipe) start() {
	p.pending.reset()
	p.done, p.err = make(chan struct{}), nil
	drain(p.ready)
	drain(p.room)
}

func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// put adds a line, waiting while the pending lines are over the bound.
func (p *linePipe) put(ctx context.Context, tag uint64, line []byte) error {
	p.mu.Lock()
	for len(p.pending.buf) >= pipeBytes {
		p.mu.Unlock()
		select {
		case <-p.room:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	p.pending.buf = append(p.pending.buf, line...)
	p.pending.ends = append(p.pending.ends, len(p.pending.buf))
	p.pending.tags = append(p.pending.tags, tag)
	p.mu.Unlock()
	signal(p.ready)
	return nil
}

// write takes the pending lines and sends them one by one, each with a
// write and a flush of its own, in one batch: each line is a chunk of its
// own, and the chunks go out together, all before write returns.
func (p *linePipe) write(s *lineStream, sent func(tag uint64)) error {
	p.mu.Lock()
	b := p.pending
	p.pending, p.spare = p.spare, lineBatch{}
	p.pending.reset()
	p.mu.Unlock()
	signal(p.room)
	defer func() {
		p.mu.Lock()
		p.spare = b
		p.mu.Unlock()
	}()
	return s.Batch(func() error {
		start := 0
		for i, end := range b.ends {
			if err := s.send(b.buf[start:end]); err != nil {
				return err
			}
			if sent != nil {
				sent(b.tags[i])
			}
			start = end
		}
		return nil
	})
}
