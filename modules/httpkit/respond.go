package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
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

// Messages fixed by docs/api.md §1.5 and shared by several modules.
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
	// ErrTooManyConnections answers every request but ping and health on a
	// connection of the reserve beyond --max-connections.
	ErrTooManyConnections = &Error{Status: http.StatusServiceUnavailable, Message: "service unavailable: too many connections", RetryAfter: 1}
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

// RefuseBody writes err like WriteError, for a request whose body will not
// be read (any longer): on HTTP/1 a request that announced a body gets the
// answer at once and its connection is closed after it, instead of the
// server reading what is left of the body first to keep the connection
// (which a client that never sends it holds up for good). On HTTP/2 the
// answer ends the stream and the connection stays.
func RefuseBody(w http.ResponseWriter, r *http.Request, err error) {
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		// What the client still sends is not awaited: reads from now on
		// fail, so the server closes the connection after the answer.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	WriteError(w, err)
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
