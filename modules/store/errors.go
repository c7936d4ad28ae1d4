package store

import (
	"errors"
	"fmt"
	"syscall"
)

// Errors of the Store, for callers to branch on with errors.Is.
var (
	// ErrPreconditionFailed reports a write whose precondition did not hold.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrClosed reports a write after the store began to close.
	ErrClosed = errors.New("store is closed")
	// ErrStorageFailure reports that the store failed and refuses writes
	// until restart; it wraps every *FailureError.
	ErrStorageFailure = errors.New("storage failure")
	// ErrReadOnly reports a write or registration while the store is in
	// read-only mode.
	ErrReadOnly = errors.New("store is read-only")
	// ErrRestoring reports a write while another node of a shared backend
	// restores a backup.
	ErrRestoring = errors.New("restore in progress")
	// ErrUnavailable reports that the backend cannot be reached now (a
	// database over the network): nothing was written, and the store tries
	// again with the next write. Backends wrap it in their errors.
	ErrUnavailable = errors.New("storage unavailable")
)

// FailureError is the error that stopped the store: every write from then on
// fails with it.
type FailureError struct {
	// Full tells that the disk or quota is exhausted (ENOSPC, EDQUOT, EFBIG).
	Full bool
	// Err is the cause.
	Err error
}

func newFailureError(err error) *FailureError {
	full := errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
	return &FailureError{Full: full, Err: err}
}

// Error describes the failure.
func (e *FailureError) Error() string { return fmt.Sprintf("storage failure: %v", e.Err) }

// Unwrap returns the cause.
func (e *FailureError) Unwrap() error { return e.Err }

// Is makes every FailureError match ErrStorageFailure.
func (e *FailureError) Is(target error) bool { return target == ErrStorageFailure }

// CorruptionError reports stored data that contradicts itself.
type CorruptionError struct {
	// Detail names the first problem found.
	Detail string
}

// Error describes the corruption.
func (e *CorruptionError) Error() string { return "store corrupted: " + e.Detail }

func corruption(format string, args ...any) error {
	return &CorruptionError{Detail: fmt.Sprintf(format, args...)}
}
