package consumer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client speaks to one eventstore service over HTTP. It is safe for
// concurrent use.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
}

// NewClient returns a client of the service at baseURL (e.g.
// "http://127.0.0.1:3000") that sends token as its API token. httpClient
// nil uses a client of http.DefaultTransport; a given client must not have
// a Timeout, which would cut consume streams: every call ends with its
// context instead.
func NewClient(baseURL, token string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	return &Client{baseURL: strings.TrimSuffix(baseURL, "/"), token: token, http: httpClient}
}

// Sentinel errors to test with errors.Is against the errors of a Client.
var (
	// ErrNotHeld is the 409 of a settle or a write with an acknowledgement
	// whose delivery is no longer held: its partition moved, or it was
	// settled already. Nothing was written.
	ErrNotHeld = errors.New("delivery is no longer held")
	// ErrNotFound is the 404 of a route naming an unknown subscription.
	ErrNotFound = errors.New("subscription not found")
	// ErrConsumerReplaced ends a consume stream that a stream of the same
	// consumer name replaced.
	ErrConsumerReplaced = errors.New("consumer replaced")
	// ErrSubscriptionDeleted ends the consume streams of a deleted
	// subscription.
	ErrSubscriptionDeleted = errors.New("subscription deleted")
	// ErrPreconditionFailed is the 409 of a write whose preconditions do
	// not all hold. Nothing was written.
	ErrPreconditionFailed = errors.New("precondition failed")
)

// Error is what the service reported: a status other than 200 with its
// plain-text message, or the error line that ended a stream (StatusCode
// 200, since the stream had begun).
type Error struct {
	// Route is the route's last path segment, e.g. "read-subscription".
	Route string
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the service's message without its trailing newline, e.g.
	// "subscription 'billing' not found".
	Message string
}

// Error returns the route, the status and the message.
func (e *Error) Error() string {
	if e.StatusCode == http.StatusOK {
		return fmt.Sprintf("%s: the stream ended with: %s", e.Route, e.Message)
	}
	return fmt.Sprintf("%s: %d %s", e.Route, e.StatusCode, e.Message)
}

// Is reports whether e is the error target names: ErrNotHeld,
// ErrNotFound, ErrConsumerReplaced, ErrSubscriptionDeleted or
// ErrPreconditionFailed.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrPreconditionFailed:
		return e.StatusCode == http.StatusConflict && e.Message == "state conflict: precondition failed"
	case ErrNotHeld:
		return e.StatusCode == http.StatusConflict && e.Message == "state conflict: delivery is no longer held"
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound && strings.HasPrefix(e.Message, "subscription ") && strings.HasSuffix(e.Message, " not found")
	case ErrConsumerReplaced:
		return e.StatusCode == http.StatusOK && e.Message == "consumer replaced"
	case ErrSubscriptionDeleted:
		return e.StatusCode == http.StatusOK && e.Message == "subscription deleted"
	}
	return false
}

// transient reports whether a request that failed with err may succeed
// when sent again: a failed connection or a body cut off, a timeout, an
// overload, an internal error; not a refusal of the request itself.
func transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return !errors.Is(err, context.Canceled) // a request's own timeout may pass
	}
	switch {
	case e.StatusCode == http.StatusOK: // an error line: the stream may be opened again
		return true
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusTooManyRequests:
		return true
	case e.StatusCode >= 500 && e.StatusCode != http.StatusNotImplemented:
		return true
	}
	return false
}

// maxErrorBody bounds the error message read from a response.
const maxErrorBody = 64 << 10

// maxLine bounds one line of an NDJSON stream (an event with its data).
const maxLine = 64 << 20

// open sends body, JSON-encoded, to route and returns the response when it
// is 200; any other status is an *Error.
func (c *Client) open(ctx context.Context, route string, body any) (*http.Response, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", route, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/api/v1/"+route, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", route, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", route, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, &Error{Route: route, StatusCode: resp.StatusCode, Message: strings.TrimSuffix(string(msg), "\n")}
	}
	return resp, nil
}

// call sends body to route and decodes the 200 answer into out (unless
// nil); it returns the answer's bytes.
func (c *Client) call(ctx context.Context, route string, body, out any) ([]byte, error) {
	resp, err := c.open(ctx, route, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", route, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s: the answer is not the expected JSON: %w", route, err)
		}
	}
	return raw, nil
}

// line is one line of an NDJSON stream.
type line struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// errorPayload is the payload of an error line.
type errorPayload struct {
	Error string `json:"error"`
}

// lineReader reads the lines of an NDJSON stream.
type lineReader struct {
	route string
	sc    *bufio.Scanner
}

func newLineReader(route string, body io.Reader) *lineReader {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &lineReader{route: route, sc: sc}
}

// next returns the next line; io.EOF at the end of the stream, an *Error
// for an error line.
func (r *lineReader) next() (line, error) {
	for r.sc.Scan() {
		raw := r.sc.Bytes()
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			return line{}, fmt.Errorf("%s: a line is not JSON: %w", r.route, err)
		}
		if l.Type == "error" {
			var p errorPayload
			_ = json.Unmarshal(l.Payload, &p)
			return line{}, &Error{Route: r.route, StatusCode: http.StatusOK, Message: p.Error}
		}
		return l, nil
	}
	if err := r.sc.Err(); err != nil {
		return line{}, fmt.Errorf("%s: %w", r.route, err)
	}
	return line{}, io.EOF
}

// stream sends body to route and calls fn with the payload of every line
// of type lineType, until the stream ends.
func (c *Client) stream(ctx context.Context, route string, body any, lineType string, fn func(payload json.RawMessage) error) error {
	resp, err := c.open(ctx, route, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	lines := newLineReader(route, resp.Body)
	for {
		l, err := lines.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if l.Type != lineType {
			continue
		}
		if err := fn(l.Payload); err != nil {
			return fmt.Errorf("%s: %w", route, err)
		}
	}
}
