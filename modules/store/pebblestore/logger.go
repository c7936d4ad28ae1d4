package pebblestore

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// logger adapts Pebble's logger to zap. Pebble reports an unrecoverable
// commit or sync error through Fatalf; instead of ending the process, Fatalf
// panics with a *fatalError, which Commit recovers into an error so that the
// store can fail-stop while reads go on.
type logger struct {
	log *zap.Logger
}

type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

func (l logger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (l logger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}

func (l logger) Fatalf(format string, args ...any) {
	f := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			f.cause = err
			break
		}
	}
	panic(f)
}

// recoverFatal turns a *fatalError panic into *err.
func recoverFatal(err *error) {
	p := recover()
	if p == nil {
		return
	}
	var f *fatalError
	if e, ok := p.(error); ok && errors.As(e, &f) {
		*err = f
		return
	}
	panic(p)
}
