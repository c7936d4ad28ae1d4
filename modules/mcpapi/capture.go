package mcpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// MaxBytes bounds the items of one tool's answer (their JSON).
const MaxBytes = 1 << 20

// errCut ends the route's stream once the answer is cut: the write fails
// as on a connection the client closed.
var errCut = errors.New("the answer is cut")

// capture is the ResponseWriter of a tool's request: it keeps a JSON
// answer whole, and of an NDJSON answer the payloads of the lines of one
// type, until max of them or MaxBytes; then it cuts the answer, cancelling
// the request, so that the route stops reading.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer // a JSON answer, or an NDJSON line not ended yet

	line    string // the type of the lines kept; "" for a JSON answer
	max     int
	items   []json.RawMessage
	size    int
	failure string // the message of an error line
	cut     bool
	cancel  func()
}

func newCapture(line string, max int, cancel func()) *capture {
	return &capture{header: http.Header{}, line: line, max: max, cancel: cancel}
}

// Header returns the answer's header.
func (c *capture) Header() http.Header { return c.header }

// WriteHeader records the status.
func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

// Flush does nothing: the answer is whole once the route returns.
func (c *capture) Flush() {}

// streamed reports whether the answer is the NDJSON stream of a route that
// succeeded, whose lines the capture takes apart.
func (c *capture) streamed() bool {
	return c.line != "" && c.status == http.StatusOK && strings.HasPrefix(c.header.Get("Content-Type"), "application/x-ndjson")
}

// Write keeps p: whole for a JSON answer or an error, line by line for a
// stream.
func (c *capture) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	if c.cut {
		return 0, errCut
	}
	if !c.streamed() {
		return c.body.Write(p)
	}
	c.body.Write(p)
	for {
		data := c.body.Bytes()
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			return len(p), nil
		}
		c.take(data[:end])
		c.body.Next(end + 1)
		if c.cut {
			return len(p), nil
		}
	}
}

// take handles one NDJSON line.
func (c *capture) take(line []byte) {
	var l struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil {
		return
	}
	switch l.Type {
	case c.line:
		if len(c.items) == c.max || len(c.items) > 0 && c.size+len(l.Payload) > MaxBytes {
			c.cut = true
			c.cancel()
			return
		}
		c.items = append(c.items, append(json.RawMessage(nil), l.Payload...))
		c.size += len(l.Payload)
	case "error":
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(l.Payload, &e)
		c.failure = e.Error
	}
}

// refusal returns the route's error, and whether it failed: the text of
// an answer other than 200, or the message of a stream's error line.
func (c *capture) refusal() (string, bool) {
	if c.status != http.StatusOK {
		return strings.TrimSpace(c.body.String()), true
	}
	return c.failure, c.failure != ""
}
