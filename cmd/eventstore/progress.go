package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"
)

// progressInterval is how often a progress line is rewritten at most.
const progressInterval = 200 * time.Millisecond

// progressLine tells how far a long task has come, on a terminal only: one
// line rewritten in place with \r, with the count, the rate and the time
// left. A nil *progressLine shows nothing.
type progressLine struct {
	w     io.Writer
	verb  string // what the task does to each item: "checked"
	unit  string // what it counts: "events"
	total uint64
	start time.Time
	shown time.Time // when the line was last written
}

// newProgressLine returns the progress line of a task on total items on w
// when w is a terminal, else nil.
func newProgressLine(w io.Writer, verb, unit string, total uint64) *progressLine {
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progressLine{w: w, verb: verb, unit: unit, total: total, start: time.Now()}
}

// update shows that done items are done, unless the line was rewritten
// less than progressInterval ago.
func (p *progressLine) update(done uint64) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.shown) < progressInterval {
		return
	}
	p.shown = now
	fmt.Fprintf(p.w, "\r\033[K%s", p.text(done, now.Sub(p.start)))
}

// text is the line after elapsed, with done items done.
func (p *progressLine) text(done uint64, elapsed time.Duration) string {
	line := fmt.Sprintf("%s %s of %s %s", p.verb, thousands(done), thousands(p.total), p.unit)
	if p.total > 0 {
		line += fmt.Sprintf(" (%d%%)", min(done*100/p.total, 100))
	}
	if elapsed <= 0 || done == 0 {
		return line
	}
	rate := float64(done) / elapsed.Seconds()
	line += fmt.Sprintf(", %s %s/s", thousands(uint64(rate)), p.unit)
	if done < p.total {
		left := time.Duration(float64(p.total-done) / rate * float64(time.Second))
		line += ", about " + left.Round(time.Second).String() + " left"
	}
	return line
}

// clear removes the line, so that what follows starts on an empty one.
func (p *progressLine) clear() {
	if p != nil && !p.shown.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// thousands writes n with commas between groups of three digits.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// rate writes n items in elapsed as items per second.
func rate(n uint64, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "-"
	}
	return thousands(uint64(float64(n) / elapsed.Seconds()))
}
