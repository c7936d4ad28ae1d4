package httpkit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// failingFlusher is a response writer whose flushes fail.
type failingFlusher struct{ *httptest.ResponseRecorder }

func (failingFlusher) FlushError() error { return errors.New("connection reset") }

func TestRecorderReportsAFailedFlush(t *testing.T) {
	rec := &Recorder{ResponseWriter: failingFlusher{httptest.NewRecorder()}}
	if err := http.NewResponseController(rec).Flush(); err == nil || !rec.WroteHeader || rec.Status != http.StatusOK {
		t.Fatalf("flush through the recorder: %v, header written %v, status %d", err, rec.WroteHeader, rec.Status)
	}
}
