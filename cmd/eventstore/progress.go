package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress reports how far a long command has come: on a terminal a bar
// redrawn in place, otherwise a plain line every progressInterval.
type progress struct {
	mu       sync.Mutex
	out      io.Writer
	terminal bool
	what     string // "events", "bytes"
	total    int64  // 0 when unknown
	start    time.Time
	last     time.Time
}

// progressInterval is how often plain progress lines are written.
const progressInterval = 5 * time.Second

func newProgress(out io.Writer, what string, total int64) *progress {
	now := time.Now()
	return &progress{out: out, terminal: isTerminal(out), what: what, total: total, start: now, last: now}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// update reports that done of total have come.
func (p *progress) update(done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	interval := progressInterval
	if p.terminal {
		interval = 200 * time.Millisecond
	}
	if now.Sub(p.last) < interval {
		return
	}
	p.last = now
	p.print(done, now)
}

func (p *progress) print(done int64, now time.Time) {
	elapsed := now.Sub(p.start).Seconds()
	rate := float64(done) / max(elapsed, 1e-9)
	line := fmt.Sprintf("%d %s, %.0f/s", done, p.what, rate)
	if p.total > 0 {
		share := min(float64(done)/float64(p.total), 1)
		left := time.Duration(float64(p.total-done)/max(rate, 1)) * time.Second
		line = fmt.Sprintf("%d of %d %s (%.0f%%), %.0f/s, %s left", done, p.total, p.what, 100*share, rate, left.Round(time.Second))
		if p.terminal {
			bar := int(share * 30)
			line = "[" + strings.Repeat("#", bar) + strings.Repeat(" ", 30-bar) + "] " + line
		}
	}
	if p.terminal {
		fmt.Fprintf(p.out, "\r%s\033[K", line)
	} else {
		fmt.Fprintln(p.out, line)
	}
}

// finish ends the bar's line on a terminal.
func (p *progress) finish() {
	if p.terminal {
		fmt.Fprintln(p.out)
	}
}
