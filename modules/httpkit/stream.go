package httpkit

import (
	"net/http"
	"sync"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// LineWriteTimeout is the time each NDJSON line has to reach the client;
// as the deadline moves on at most once per deadlineRenewal, a line may
// have up to that much less.
const LineWriteTimeout = 60 * time.Second

// deadlineRenewal is how often a stream moves its write deadline on.
const deadlineRenewal = time.Second

// StopGrace is how long a stream has for its last line once the service
// stops: a client that does not read by then loses the connection, so that
// no client holds the shutdown up.
const StopGrace = 500 * time.Millisecond

// Stream writes an NDJSON response: every line is one compact JSON object
// {"type":...,"payload":...} written with a single Write and flushed at
// once, so that it goes out as a chunk of its own (on HTTP/2, in frames of
// its own): never two lines in one chunk and never a line split over chunks
// (some client SDKs parse each received chunk as one document). Within
// Batch, the connection sends several such chunks with one socket write.
type Stream struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	batch    WriteBatch // of the connection; nil on HTTP/2
	batching bool       // inside Batch
	renewAt  time.Time  // when the write deadline is due to move on
	buf      []byte

	mu       sync.Mutex
	endBy    time.Time // when set, no write outlasts it
	finished bool      // the handler is done with the response
}

// StartStream sends status 200 with the NDJSON content type and flushes the
// headers, before any line; r is the request it answers.
func StartStream(w http.ResponseWriter, r *http.Request) *Stream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	s := &Stream{w: w, rc: http.NewResponseController(w), batch: WriteBatchOf(r)}
	_ = s.rc.Flush()
	return s
}

// AppendLine appends the line {"type":lineType,"payload":payload} with its
// newline to dst; payload must be compact JSON.
func AppendLine(dst []byte, lineType string, payload []byte) []byte {
	return EndLine(append(StartLine(dst, lineType), payload...))
}

// StartLine appends the start of a line of lineType to dst, for a caller
// that appends its payload in place and then ends it (EndLine).
func StartLine(dst []byte, lineType string) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, lineType...)
	return append(dst, `","payload":`...)
}

// EndLine appends the end of a line that StartLine began, after its
// payload.
func EndLine(dst []byte) []byte { return append(dst, '}', '\n') }

// Line writes the line {"type":lineType,"payload":payload}; payload must be
// compact JSON. It fails when the client is gone or too slow.
func (s *Stream) Line(lineType string, payload []byte) error {
	s.buf = AppendLine(s.buf[:0], lineType, payload)
	return s.WriteLine(s.buf)
}

// WriteLine writes one complete line (ending in a newline), formatted by
// the caller, with a single write, and flushes it.
func (s *Stream) WriteLine(line []byte) error {
	s.renewDeadline()
	if err := s.makeRoom(len(line)); err != nil {
		return err
	}
	if _, err := s.w.Write(line); err != nil {
		return err
	}
	return s.rc.Flush()
}

// renewDeadline gives the writes that follow LineWriteTimeout, never beyond
// the time EndBy set. It moves the deadline at most once per
// deadlineRenewal: setting it costs as much as writing a short line. The
// deadline is set under the lock, so that it cannot undo a concurrent
// EndBy.
func (s *Stream) renewDeadline() {
	now := time.Now()
	if now.Before(s.renewAt) {
		return
	}
	s.renewAt = now.Add(deadlineRenewal)
	deadline := now.Add(LineWriteTimeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.endBy.IsZero() && s.endBy.Before(deadline) {
		deadline = s.endBy
	}
	_ = s.rc.SetWriteDeadline(deadline)
}

// EndBy makes the write in progress, and every later one, give up at t. It
// may be called from another goroutine, also after Finish (then it does
// nothing).
func (s *Stream) EndBy(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	s.endBy = t
	_ = s.rc.SetWriteDeadline(t)
}

// Finish tells the stream that its handler is done with the response.
func (s *Stream) Finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
}

// Error writes the final error line of a stream.
func (s *Stream) Error(message string) {
	payload := jsonscan.AppendString([]byte(`{"error":`), message)
	_ = s.Line("error", append(payload, '}'))
}
