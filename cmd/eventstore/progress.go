package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress tells how far a long command has come: on a terminal a bar
// with the count, the rate and the time left, rewritten in place at most
// every 200ms; otherwise the same as a plain line every 5s.
type progress struct {
	mu       sync.Mutex
	out      io.Writer
	terminal bool
	verb     string // what the command does to each item: "checked"
	unit     string // what it counts: "events", "bytes"
	total    int64  // 0 when unknown
	start    time.Time
	shown    time.Time // when a line was last written
}

// Intervals between progress lines.
const (
	terminalInterval = 200 * time.Millisecond
	plainInterval    = 5 * time.Second
)

func newProgress(out io.Writer, verb, unit string, total int64) *progress {
	now := time.Now()
	return &progress{out: out, terminal: isTerminal(out), verb: verb, unit: unit, total: total, start: now, shown: now}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// update reports that done items are done.
func (p *progress) update(done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	interval := plainInterval
	if p.terminal {
		interval = terminalInterval
	}
	if now.Sub(p.shown) < interval {
		return
	}
	p.shown = now
	line := p.text(done, now.Sub(p.start))
	if !p.terminal {
		fmt.Fprintln(p.out, line)
		return
	}
	if p.total > 0 {
		bar := int(min(float64(done)/float64(p.total), 1) * 30)
		line = "[" + strings.Repeat("#", bar) + strings.Repeat(" ", 30-bar) + "] " + line
	}
	fmt.Fprintf(p.out, "\r\033[K%s", line)
}

// text is the line after elapsed, with done items done.
func (p *progress) text(done int64, elapsed time.Duration) string {
	line := fmt.Sprintf("%s %s %s", p.verb, thousands(done), p.unit)
	if p.total > 0 {
		line = fmt.Sprintf("%s %s of %s %s (%d%%)", p.verb, thousands(done), thousands(p.total), p.unit, min(done*100/p.total, 100))
	}
	if elapsed <= 0 || done == 0 {
		return line
	}
	rate := float64(done) / elapsed.Seconds()
	line += fmt.Sprintf(", %s %s/s", thousands(int64(rate)), p.unit)
	if done < p.total {
		left := time.Duration(float64(p.total-done) / rate * float64(time.Second))
		line += ", about " + left.Round(time.Second).String() + " left"
	}
	return line
}

// finish removes the bar from a terminal, so that what follows starts on an
// empty line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.shown != p.start {
		fmt.Fprint(p.out, "\r\033[K")
	}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// perSecond writes n items in elapsed as items per second.
func perSecond(n int64, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "-"
	}
	return thousands(int64(float64(n) / elapsed.Seconds()))
}
