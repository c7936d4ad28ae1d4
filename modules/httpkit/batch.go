package httpkit

import (
	"context"
	"net/http"
)

// WriteBatch holds back the writes of a connection, so that a stream can
// send several lines with one write to the socket. The HTTP server still
// frames every flushed line as a chunk of its own; only the socket writes
// are fewer: between Hold and Release the connection collects the bytes the
// server writes to it (chunk size, line, CRLF) instead of sending them.
type WriteBatch interface {
	// Hold starts collecting the connection's writes.
	Hold()
	// Held returns the number of bytes collected and not yet sent.
	Held() int
	// Flush sends the collected bytes with one write and goes on collecting.
	Flush() error
	// Release sends the collected bytes and stops collecting.
	Release() error
}

type writeBatchKey struct{}

// WithWriteBatch returns ctx carrying the write batch of a connection; the
// server puts it into the context of every connection it accepts.
func WithWriteBatch(ctx context.Context, b WriteBatch) context.Context {
	return context.WithValue(ctx, writeBatchKey{}, b)
}

// WriteBatchOf returns the write batch of r's connection, or nil when the
// connection has none or r is not HTTP/1: HTTP/2 carries many streams over
// one connection, and its frames are not held back.
func WriteBatchOf(r *http.Request) WriteBatch {
	if r == nil || r.ProtoMajor != 1 {
		return nil
	}
	b, _ := r.Context().Value(writeBatchKey{}).(WriteBatch)
	return b
}

// BatchBytes bounds the bytes a batch holds back before it sends them: 16
// KiB, libcurl's default receive buffer, so that a client keeping up gets
// whole lines with each read.
const BatchBytes = 16 << 10

// chunkFraming bounds what the HTTP server adds to a line to make it a
// chunk: the size in hex and two CRLFs.
const chunkFraming = 16

// Batch calls write and sends the lines it writes with as few writes to the
// socket as it can: every line is still written and flushed on its own, so
// the HTTP server makes it a chunk of its own, but the connection holds the
// chunks back and sends them together, at most BatchBytes at a time (a
// longer line alone), and all of them before Batch returns. Without a write
// batch (HTTP/2) every line goes out as it is flushed.
func (s *Stream) Batch(write func() error) (err error) {
	if s.batch == nil {
		return write()
	}
	s.batch.Hold()
	s.batching = true
	defer func() { // also when write panics: nothing may stay held
		s.batching = false
		if released := s.batch.Release(); err == nil {
			err = released
		}
	}()
	return write()
}

// makeRoom sends what the batch holds when a line of n bytes would take it
// beyond BatchBytes.
func (s *Stream) makeRoom(n int) error {
	if !s.batching {
		return nil
	}
	if held := s.batch.Held(); held > 0 && held+n+chunkFraming > BatchBytes {
		return s.batch.Flush()
	}
	return nil
}
