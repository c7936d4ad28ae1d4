package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Error is a failure with the status code and plain-text message the client
// receives. Handlers translate domain errors into it.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is the body without the trailing newline.
	Message string
	// RetryAfter, when positive, is sent as the Retry-After header in
	// seconds: when a client may try again.
	RetryAfter int
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// Messages fixed by api.md and shared by several modules.
var (
	// ErrUnauthorized answers a missing or wrong token.
	ErrUnauthorized = &Error{Status: http.StatusUnauthorized, Message: "unauthorized"}
	// ErrShuttingDown answers requests while the service shuts down.
	ErrShuttingDown = &Error{Status: http.StatusServiceUnavailable, Message: "service unavailable: shutting down"}
	// ErrRestoring answers every request but ping, health and the restore
	// while a restore runs.
	ErrRestoring = &Error{Status: http.StatusServiceUnavailable, Message: "service unavailable: restore in progress", RetryAfter: 1}
	// ErrReadOnly answers writes and registrations in read-only mode.
	ErrReadOnly = &Error{Status: http.StatusServiceUnavailable, Message: "service unavailable: read-only mode"}
	// ErrUnknownRoute answers requests that match no route.
	ErrUnknownRoute = &Error{Status: http.StatusNotFound, Message: "not found: unknown route"}
	// ErrUnexpected answers failures that have no better description.
	ErrUnexpected = &Error{Status: http.StatusInternalServerError, Message: "internal error: unexpected failure"}
)

// WriteError writes err as a plain-text error response: the message followed
// by one newline, Content-Type text/plain; charset=utf-8. An *Error keeps its
// status and message, an exceeded body limit is 413, anything else is 500
// without details (the caller logs those).
func WriteError(w http.ResponseWriter, err error) {
	var (
		apiErr   *Error
		tooLarge *http.MaxBytesError
	)
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &tooLarge):
		apiErr = Errorf(http.StatusRequestEntityTooLarge, "request too large: body exceeds the limit of %d bytes", tooLarge.Limit)
	default:
		apiErr = ErrUnexpected
	}
	if apiErr.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(apiErr.RetryAfter))
	}
	http.Error(w, apiErr.Message, apiErr.Status)
}

// WriteJSON writes v as a 200 application/json response.
func WriteJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}
