package ui

import (
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// securityHeaders are set on every UI response.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
	"Referrer-Policy":         "no-referrer",
	"Cache-Control":           "no-cache",
}

// NewRoutes returns a GET route for every file of files, and "/" for
// index.html.
func NewRoutes(files fs.FS) ([]httpkit.Route, error) {
	var routes []httpkit.Route
	err := fs.WalkDir(files, ".", func(name string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return fmt.Errorf("read ui file %s: %w", name, err)
		}
		handler := serveFile(body, mime.TypeByExtension(path.Ext(name)))
		routes = append(routes, httpkit.Route{Method: http.MethodGet, Path: "/" + name, Handler: handler})
		if name == "index.html" {
			routes = append(routes, httpkit.Route{Method: http.MethodGet, Path: "/", Handler: handler})
		}
		return nil
	})
	return routes, err
}

func serveFile(body []byte, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range securityHeaders {
			h.Set(k, v)
		}
		h.Set("Content-Type", contentType)
		_, _ = w.Write(body)
	})
}
