package httpkit

import (
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// LineWriteTimeout is the time each NDJSON line has to reach the client.
const LineWriteTimeout = 60 * time.Second

// Stream writes an NDJSON response: every line is one compact JSON object
// {"type":...,"payload":...} written with a single Write and flushed at
// once, never two lines in one write and never a line split over writes
// (some client SDKs parse each received chunk as one document).
type Stream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

// StartStream sends status 200 with the NDJSON content type and flushes the
// headers, before any line.
func StartStream(w http.ResponseWriter) *Stream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	s := &Stream{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// AppendLine appends the line {"type":lineType,"payload":payload} with its
// newline to dst; payload must be compact JSON.
func AppendLine(dst []byte, lineType string, payload []byte) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, lineType...)
	dst = append(dst, `","payload":`...)
	dst = append(dst, payload...)
	return append(dst, '}', '\n')
}

// Line writes the line {"type":lineType,"payload":payload}; payload must be
// compact JSON. It fails when the client is gone or too slow.
func (s *Stream) Line(lineType string, payload []byte) error {
	s.buf = AppendLine(s.buf[:0], lineType, payload)
	return s.WriteLine(s.buf)
}

// WriteLine writes one complete line (ending in a newline), formatted by
// the caller, with a single write, and flushes it.
func (s *Stream) WriteLine(line []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(LineWriteTimeout))
	if _, err := s.w.Write(line); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Error writes the final error line of a stream.
func (s *Stream) Error(message string) {
	payload := jsonscan.AppendString([]byte(`{"error":`), message)
	_ = s.Line("error", append(payload, '}'))
}
