package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteError(t *testing.T) {
	limited := func() error {
		r := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader("0123456789")), 4)
		_, err := io.ReadAll(r)
		return fmt.Errorf("decode body: %w", err)
	}
	cases := []struct {
		name   string
		err    error
		status int
		body   string
	}{
		{"api error", ErrUnauthorized, 401, "unauthorized\n"},
		{"wrapped api error", fmt.Errorf("context: %w", Errorf(409, "state conflict: %s", "precondition failed")), 409, "state conflict: precondition failed\n"},
		{"body limit", limited(), 413, "request too large: body exceeds the limit of 4 bytes\n"},
		{"unknown", errors.New("disk on fire"), 500, "internal error: unexpected failure\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, tc.err)
			if rec.Code != tc.status || rec.Body.String() != tc.body {
				t.Fatalf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.status, tc.body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, map[string]string{"title": "<b>"})
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != `{"title":"\u003cb\u003e"}`+"\n" {
		t.Fatalf("got %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

func TestRouteOf(t *testing.T) {
	r := httptest.NewRequest("GET", "/x", nil)
	if got := RouteOf(r); got != Unmatched {
		t.Fatalf("RouteOf without a route: %q", got)
	}
	r = r.WithContext(WithRoute(r.Context(), "/api/v1/ping"))
	if got := RouteOf(r); got != "/api/v1/ping" {
		t.Fatalf("RouteOf: %q", got)
	}
}

func TestDecodeJSON(t *testing.T) {
	type target struct {
		Subject string          `json:"subject"`
		Options json.RawMessage `json:"options"`
	}
	cases := []struct {
		body, subject, err string
	}{
		{"", "", ""},
		{"  \n", "", ""},
		{"null", "", ""},
		{`{"subject":"/a"}`, "/a", ""},
		{`{"SUBJECT":"/a","unknown":1}`, "/a", ""},
		{`{"subject":"/a","subject":"/b"}`, "/b", ""},
		{`{"subject":1}`, "", "invalid request: malformed JSON: field 'subject' must be a string"},
		{`{"subject":"/a"} x`, "", "invalid request: malformed JSON: invalid character 'x' after top-level value"},
		{`{"subject":`, "", "invalid request: malformed JSON: unexpected end of JSON input"},
		{`[1,2]`, "", "invalid request: malformed JSON: request body must be a JSON object"},
		{`"text"`, "", "invalid request: malformed JSON: request body must be a JSON object"},
		{`{"options":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, "", "invalid request: JSON nesting depth exceeds the limit of 64"},
		{`{"subject":"[[[[` + strings.Repeat("[", 100) + `"}`, strings.Repeat("[", 104), ""},
	}
	for _, tc := range cases {
		var v target
		err := DecodeJSON([]byte(tc.body), &v)
		if tc.err == "" && (err != nil || v.Subject != tc.subject) {
			t.Errorf("DecodeJSON(%q) = %v, subject %q", tc.body, err, v.Subject)
		}
		if tc.err != "" {
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Message != tc.err {
				t.Errorf("DecodeJSON(%q) = %v, want 400 %q", tc.body, err, tc.err)
			}
		}
	}
}

func TestCheckOptions(t *testing.T) {
	known := []string{"recursive", "lowerBound"}
	for raw, want := range map[string]string{
		``:                                   "",
		`null`:                               "",
		`{}`:                                 "",
		`{"recursive":true,"LOWERBOUND":{}}`: "",
		`{"recursive":true,"upperBound":{"id":"1"}}`: "invalid request: unknown option 'upperBound'",
		`[]`: "invalid request: malformed JSON: options must be an object",
	} {
		err := CheckOptions(json.RawMessage(raw), known...)
		if (want == "") != (err == nil) || (err != nil && err.Error() != want) {
			t.Errorf("CheckOptions(%s) = %v, want %q", raw, err, want)
		}
	}
}

func TestStream(t *testing.T) {
	rec := httptest.NewRecorder()
	s := StartStream(rec, httptest.NewRequest("POST", "/", nil))
	if !rec.Flushed || rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("headers not flushed at start: %d %v", rec.Code, rec.Header())
	}
	if err := s.Line("event", []byte(`{"id":"0"}`)); err != nil {
		t.Fatal(err)
	}
	s.Error("service unavailable: shutting down")
	want := `{"type":"event","payload":{"id":"0"}}` + "\n" + `{"type":"error","payload":{"error":"service unavailable: shutting down"}}` + "\n"
	if rec.Body.String() != want {
		t.Fatalf("stream body %q", rec.Body.String())
	}
}
