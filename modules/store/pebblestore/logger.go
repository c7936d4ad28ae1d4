package pebblestore

import (
	"fmt"
	"reflect"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/throttle"
)

// Rate limit of Pebble's error lines.
const (
	// repeatInterval is the least time between two lines of the same error.
	repeatInterval = time.Minute
	// maxTrackedErrors bounds the errors whose repeats are counted.
	maxTrackedErrors = 64
)

// logger adapts Pebble's logger to zap.
//
// Infof is DEBUG. Errorf is ERROR, its repeats rate-limited: on a full disk
// Pebble retries a failing flush many times a second, so an error is
// logged the first time and then at most once per interval, with the number
// of repeats left out since the line before ("suppressed"). Repeats are
// errors whose message differs only in its numbers (job ids, file numbers).
//
// Fatalf is Pebble's report that it cannot go on. Called on a goroutine
// running guarded (Open, Commit, Close), it panics with a *fatalError that
// guarded turns into the method's error: a failed commit then fail-stops the
// store while reads go on. Anywhere else (a flush or compaction goroutine)
// nothing could recover; it logs FATAL `storage fatal error, exiting` and
// ends the process with exit code 1. Nothing acknowledged is lost: every
// acknowledged write is synced, and the next start replays Pebble's WAL.
type logger struct {
	log     *zap.Logger
	repeats *throttle.Keyed // by the message's shape
}

// newLogger returns a logger to log that lets an error through once per
// interval.
func newLogger(log *zap.Logger, interval time.Duration) *logger {
	return &logger{log: log, repeats: throttle.NewKeyed(interval, maxTrackedErrors)}
}

func (l *logger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (l *logger) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ok, suppressed := l.repeats.Allow(shape(msg))
	switch {
	case !ok:
	case suppressed > 0:
		l.log.Error(msg, zap.Int("suppressed", suppressed))
	default:
		l.log.Error(msg)
	}
}

// shape returns msg with every run of digits replaced by '#'.
func shape(msg string) string {
	out := make([]byte, 0, len(msg))
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c < '0' || c > '9' {
			out = append(out, c)
		} else if len(out) == 0 || out[len(out)-1] != '#' {
			out = append(out, '#')
		}
	}
	return string(out)
}

func (l *logger) Fatalf(format string, args ...any) {
	f := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			f.cause = err
			break
		}
	}
	if onGuardedGoroutine() {
		panic(f)
	}
	l.log.Fatal("storage fatal error, exiting", zap.Error(f))
	select {} // only a test's fatal hook returns; Pebble must not go on
}

// fatalError is an error Pebble reported through Fatalf.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

// guarded runs f and returns its error, or the *fatalError of a Fatalf that
// Pebble called on this goroutine while f ran.
func guarded(f func() error) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if fatal, ok := p.(*fatalError); ok {
			err = fatal
			return
		}
		panic(p)
	}()
	return f()
}

// onGuardedGoroutine reports whether the calling goroutine runs guarded,
// which then recovers a panic. Pebble calls Fatalf a few dozen frames below
// the method that entered it, so the innermost 256 frames hold guarded if
// the goroutine runs it.
func onGuardedGoroutine() bool {
	name := runtime.FuncForPC(reflect.ValueOf(guarded).Pointer()).Name()
	pcs := make([]uintptr, 256)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		frame, more := frames.Next()
		if frame.Function == name {
			return true
		}
		if !more {
			return false
		}
	}
}
