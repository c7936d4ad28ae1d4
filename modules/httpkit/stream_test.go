package httpkit

import (
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a response recorder that keeps the write deadlines
// set on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (r *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	r.deadlines = append(r.deadlines, t)
	return nil
}

func TestStreamRenewsTheDeadlineSparinglyAndNeverBeyondEndBy(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	s := StartStream(rec, httptest.NewRequest("POST", "/", nil))
	start := time.Now()
	for i := 0; i < 1000; i++ {
		if err := s.Line("row", []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	renewals := 1 + int(time.Since(start)/deadlineRenewal) // 1 unless the machine stalled
	if n := len(rec.deadlines); n == 0 || n > renewals || rec.deadlines[0].Before(start.Add(LineWriteTimeout)) {
		t.Fatalf("deadlines for 1000 lines: %v", rec.deadlines)
	}
	rec.deadlines = rec.deadlines[:1]

	end := time.Now().Add(StopGrace)
	s.EndBy(end)
	s.renewAt = time.Time{} // as if the renewal were due
	if err := s.Line("row", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.deadlines); n != 3 || !rec.deadlines[1].Equal(end) || !rec.deadlines[2].Equal(end) {
		t.Fatalf("deadlines after EndBy(%v): %v", end, rec.deadlines)
	}
}
