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
// into a 413 through WriteError, its time limits into their *Error (408).
func ReadBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var (
			tooLarge *http.MaxBytesError
			apiErr   *Error
		)
		if errors.As(err, &tooLarge) || errors.As(err, &apiErr) {
			return nil, err
		}
		return nil, Errorf(http.StatusBadRequest, "invalid request: cannot read body: %v", err)
	}
	return body, nil
}

// DecodeBody reads r's body and decodes it into v as DecodeJSON does.
func DecodeBody(r *http.Request, v any) error {
	body, err := ReadBody(r)
	if err != nil {
		return err
	}
	return DecodeJSON(body, v)
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
// brackets inside strings. It does not validate; the decoder does. It
// jumps over strings, most of a body, with bytes.IndexByte: a quote ends a
// string unless an odd number of backslashes precedes it.
func depth(raw []byte) int {
	deepest, current := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			end := stringEnd(raw, i+1)
			if end < 0 {
				return deepest
			}
			i = end
		case '{', '[':
			current++
			deepest = max(deepest, current)
		case '}', ']':
			current--
		}
	}
	return deepest
}

// stringEnd returns the index of the quote that ends the string whose
// contents start at from, or -1 when none does.
func stringEnd(raw []byte, from int) int {
	for {
		q := bytes.IndexByte(raw[from:], '"')
		if q < 0 {
			return -1
		}
		q += from
		backslashes := 0
		for j := q - 1; j >= from && raw[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q
		}
		from = q + 1
	}
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
