package httpkit

import "net/http"

// Recorder remembers the status and size of a response. It unwraps for
// http.ResponseController and flushes, so streams work through it.
type Recorder struct {
	http.ResponseWriter
	Status      int   // the status written, once WroteHeader
	Bytes       int64 // the body's bytes written
	WroteHeader bool
}

// WriteHeader records status and writes it.
func (r *Recorder) WriteHeader(status int) {
	if !r.WroteHeader {
		r.Status, r.WroteHeader = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

// Write writes p, recording 200 if no status was written before.
func (r *Recorder) Write(p []byte) (int, error) {
	if !r.WroteHeader {
		r.Status, r.WroteHeader = http.StatusOK, true
	}
	n, err := r.ResponseWriter.Write(p)
	r.Bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client.
func (r *Recorder) Flush() { _ = r.FlushError() }

// FlushError sends buffered data to the client and returns what failed, so
// that http.ResponseController.Flush reports it to a stream at once.
func (r *Recorder) FlushError() error {
	if !r.WroteHeader {
		r.Status, r.WroteHeader = http.StatusOK, true
	}
	return http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap returns the underlying writer for http.ResponseController.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
