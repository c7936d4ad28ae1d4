package httpkit

import (
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
