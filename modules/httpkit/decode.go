package httpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/eventstore-service/eventstore/modules/event"
)

// MaxDepth is the deepest JSON nesting a request body may have.
const MaxDepth = 64

// ReadBody reads the whole request body; the body limit of the server turns
// into a 413 through WriteError.
func ReadBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, Errorf(http.StatusBadRequest, "invalid request: cannot read body: %v", err)
	}
	return body, nil
}

// DecodeJSON decodes a request body into v the lenient way of the API: an
// empty or whitespace-only body and a literal null count as {}, field names
// match case-insensitively, unknown fields are ignored, the last of duplicate
// keys wins. Nesting deeper than MaxDepth, malformed JSON, wrong JSON types
// and trailing data are 400 errors.
func DecodeJSON(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	if err := CheckDepth(trimmed); err != nil {
		return err
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return Errorf(http.StatusBadRequest, "invalid request: malformed JSON: %s", DescribeJSONError(err, "request body"))
	}
	return nil
}

// CheckDepth returns a 400 error when raw nests deeper than MaxDepth.
func CheckDepth(raw []byte) error {
	if depth(raw) > MaxDepth {
		return Errorf(http.StatusBadRequest, "invalid request: JSON nesting depth exceeds the limit of %d", MaxDepth)
	}
	return nil
}

// depth returns the deepest nesting of objects and arrays in raw, ignoring
// brackets inside strings. It does not validate; the decoder does.
func depth(raw []byte) int {
	deepest, current := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			current++
			deepest = max(deepest, current)
		case c == '}' || c == ']':
			current--
		}
	}
	return deepest
}

// CheckOptions returns a 400 error for the first key of the options object
// raw that matches none of known (compared case-insensitively, as decoding
// does). Absent or null options pass.
func CheckOptions(raw json.RawMessage, known ...string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Errorf(http.StatusBadRequest, "invalid request: malformed JSON: options must be an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Errorf(http.StatusBadRequest, "invalid request: malformed JSON: %v", err)
		}
		key, _ := tok.(string)
		if !containsFold(known, key) {
			return Errorf(http.StatusBadRequest, "invalid request: unknown option %s", event.Quote(key))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return Errorf(http.StatusBadRequest, "invalid request: malformed JSON: %v", err)
		}
	}
	return nil
}

func containsFold(list []string, s string) bool {
	for _, k := range list {
		if strings.EqualFold(k, s) {
			return true
		}
	}
	return false
}
