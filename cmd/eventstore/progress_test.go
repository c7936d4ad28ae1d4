package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressText(t *testing.T) {
	p := &progress{verb: "checked", unit: "events", total: 1_000_000}
	for _, tc := range []struct {
		done    int64
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
	unknown := &progress{verb: "read", unit: "bytes"}
	if got := unknown.text(2048, time.Second); got != "read 2,048 bytes, 2,048 bytes/s" {
		t.Errorf("without a total: %q", got)
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 123456789: "123,456,789", -1234: "-1,234", -123: "-123"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestProgressPlainLines: output that is not a terminal gets plain lines,
// no bar and no control characters, at most every plainInterval.
func TestProgressPlainLines(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, "checked", "events", 10)
	p.update(1)
	if out.Len() != 0 {
		t.Fatalf("a line before the interval: %q", out.String())
	}
	p.shown = p.shown.Add(-plainInterval)
	p.update(5)
	p.finish()
	if got := out.String(); !strings.HasPrefix(got, "checked 5 of 10 events (50%)") || strings.ContainsAny(got, "\r\033[") || strings.Count(got, "\n") != 1 {
		t.Fatalf("wrote %q", got)
	}
}
