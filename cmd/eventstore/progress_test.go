package main

import (
	"bytes"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	p := &progressLine{verb: "checked", unit: "events", total: 1_000_000}
	for _, tc := range []struct {
		done    uint64
		elapsed time.Duration
		want    string
	}{
		{0, 0, "checked 0 of 1,000,000 events (0%)"},
		{250_000, 500 * time.Millisecond, "checked 250,000 of 1,000,000 events (25%), 500,000 events/s, about 2s left"},
		{1_000_000, 2 * time.Second, "checked 1,000,000 of 1,000,000 events (100%), 500,000 events/s"},
		{1_000_123, 2 * time.Second, "checked 1,000,123 of 1,000,000 events (100%), 500,061 events/s"},
	} {
		if got := p.text(tc.done, tc.elapsed); got != tc.want {
			t.Errorf("text(%d, %s) = %q, want %q", tc.done, tc.elapsed, got, tc.want)
		}
	}
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 123456789: "123,456,789"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestProgressLineOnlyOnATerminal: output that is not a terminal gets no
// progress line, and a nil line does nothing.
func TestProgressLineOnlyOnATerminal(t *testing.T) {
	var out bytes.Buffer
	p := newProgressLine(&out, "checked", "events", 10)
	if p != nil {
		t.Fatal("a progress line on a buffer")
	}
	p.update(5)
	p.clear()
	if out.Len() != 0 {
		t.Fatalf("wrote %q", out.String())
	}
}
