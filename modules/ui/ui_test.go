package ui

import (
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/eventstore-service/eventstore/ui"
)

func TestNewRoutes(t *testing.T) {
	routes, err := NewRoutes(fstest.MapFS{
		"index.html":   {Data: []byte("<!doctype html>")},
		"app.js":       {Data: []byte("export {}")},
		"img/logo.svg": {Data: []byte("<svg/>")},
	})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, r := range routes {
		rec := httptest.NewRecorder()
		r.Handler.ServeHTTP(rec, httptest.NewRequest("GET", r.Path, nil))
		byPath[r.Path] = rec.Header().Get("Content-Type") + " " + rec.Body.String()
		if csp := rec.Header().Get("Content-Security-Policy"); csp != "default-src 'self'; frame-ancestors 'none'" {
			t.Errorf("%s: CSP %q", r.Path, csp)
		}
		if rec.Header().Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: no Referrer-Policy", r.Path)
		}
	}
	want := map[string]string{
		"/":             "text/html; charset=utf-8 <!doctype html>",
		"/index.html":   "text/html; charset=utf-8 <!doctype html>",
		"/app.js":       "text/javascript; charset=utf-8 export {}",
		"/img/logo.svg": "image/svg+xml <svg/>",
	}
	for p, w := range want {
		if byPath[p] != w {
			t.Errorf("%s: got %q, want %q", p, byPath[p], w)
		}
	}
	if len(byPath) != len(want) {
		t.Errorf("routes %v", byPath)
	}
}

func TestEmbeddedFilesReferenceNothingExternal(t *testing.T) {
	routes, err := NewRoutes(ui.Files)
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 4 {
		t.Fatalf("embedded UI has only %d routes", len(routes))
	}
	for _, r := range routes {
		rec := httptest.NewRecorder()
		r.Handler.ServeHTTP(rec, httptest.NewRequest("GET", r.Path, nil))
		// The SVG namespace is a name, never fetched.
		body := strings.ReplaceAll(rec.Body.String(), "'http://www.w3.org/2000/svg'", "")
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("%s references an external URL", r.Path)
		}
	}
}
