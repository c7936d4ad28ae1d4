package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/download"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// The routes of downloads (docs/api.md §4.12a).
const (
	CreateDownloadPath = "/api/v1/create-download"
	DownloadPath       = "/api/v1/download"
	ReadDownloadPath   = "/api/v1/read-download"
	CancelDownloadPath = "/api/v1/cancel-download"
)

var (
	errUnknownDownload  = &httpkit.Error{Status: http.StatusNotFound, Message: "not found: unknown download"}
	errTooManyDownloads = &httpkit.Error{Status: http.StatusConflict, Message: "state conflict: too many downloads"}
	fileName            = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// errorBodyLimit is how much of a refused download's error body is kept
// for its status.
const errorBodyLimit = 1024

// downloads serves the download routes: a ticket for one request of a
// downloadable route (Route.Download), the request itself when the browser
// fetches the ticket's URL, and the download's status and cancellation.
// The request goes through the route's own chain (dispatch), with the
// token of the ticket's creator: the same authentication, grants,
// admission limits, audit, logs and metrics as when it is asked directly.
type downloads struct {
	reg      *download.Registry
	names    map[string]string             // downloadable path → default file name
	perms    map[string]httpkit.Permission // downloadable path → permission
	dispatch http.Handler                  // the router, set once built
}

func newDownloads(reg *download.Registry, routes []httpkit.Route) *downloads {
	if reg == nil {
		reg = download.NewRegistry(download.DefaultOptions)
	}
	d := &downloads{reg: reg, names: map[string]string{}, perms: map[string]httpkit.Permission{}}
	for _, route := range routes {
		if route.Download != "" {
			d.names[route.Path] = route.Download
			d.perms[route.Path] = route.Permission
		}
	}
	return d
}

// routes returns the download routes; none when no route is downloadable.
func (d *downloads) routes() []httpkit.Route {
	if len(d.names) == 0 {
		return nil
	}
	return []httpkit.Route{
		{Method: http.MethodPost, Path: CreateDownloadPath, Permission: httpkit.PermitAnyToken, Handler: http.HandlerFunc(d.create)},
		{Method: http.MethodGet, Path: DownloadPath, Public: true, Handler: http.HandlerFunc(d.serve)},
		{Method: http.MethodPost, Path: ReadDownloadPath, Permission: httpkit.PermitAnyToken, Handler: http.HandlerFunc(d.read)},
		{Method: http.MethodPost, Path: CancelDownloadPath, Permission: httpkit.PermitAnyToken, Handler: http.HandlerFunc(d.cancel)},
	}
}

// create is POST /api/v1/create-download: a ticket for one request of a
// downloadable route, for a token whose grants allow the route.
func (d *downloads) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Route    string          `json:"route"`
		Body     json.RawMessage `json:"body"`
		Filename string          `json:"filename"`
	}
	if err := httpkit.DecodeBody(r, &req); err != nil {
		httpkit.WriteError(w, err)
		return
	}
	name, ok := d.names[req.Route]
	if !ok {
		httpkit.WriteError(w, httpkit.Errorf(http.StatusBadRequest, "invalid request: route '%s' has no downloads", req.Route))
		return
	}
	if req.Filename != "" {
		if !fileName.MatchString(req.Filename) {
			httpkit.WriteError(w, httpkit.Errorf(http.StatusBadRequest, "invalid request: invalid file name '%s'", req.Filename))
			return
		}
		name = req.Filename
	}
	if perm := d.perms[req.Route]; !auth.Allowed(r.Context(), func(g auth.Grants) bool { return g.Allows(perm) }) {
		auth.Refuse(w, r)
		return
	}
	body := bytes.TrimSpace(req.Body)
	if string(body) == "null" {
		body = nil
	}
	ticket, expires, err := d.reg.Create(download.Request{Route: req.Route, Authorization: r.Header.Get("Authorization"), Body: body, Filename: name})
	if errors.Is(err, download.ErrTooMany) {
		httpkit.WriteError(w, errTooManyDownloads)
		return
	}
	if err != nil {
		httpkit.WriteError(w, fmt.Errorf("create a download ticket: %w", err))
		return
	}
	httpkit.WriteJSON(w, map[string]string{
		"ticket":  ticket,
		"url":     DownloadPath + "?ticket=" + ticket,
		"expires": expires.UTC().Format(time.RFC3339Nano),
	})
}

// read is POST /api/v1/read-download: the status of a download.
func (d *downloads) read(w http.ResponseWriter, r *http.Request) {
	d.status(w, r, d.reg.Status)
}

// cancel is POST /api/v1/cancel-download: stops a download and answers its
// status.
func (d *downloads) cancel(w http.ResponseWriter, r *http.Request) {
	d.status(w, r, d.reg.Cancel)
}

func (d *downloads) status(w http.ResponseWriter, r *http.Request, of func(string) (download.Status, error)) {
	var req struct {
		Ticket string `json:"ticket"`
	}
	if err := httpkit.DecodeBody(r, &req); err != nil {
		httpkit.WriteError(w, err)
		return
	}
	s, err := of(req.Ticket)
	if err != nil {
		httpkit.WriteError(w, errUnknownDownload)
		return
	}
	httpkit.WriteJSON(w, s)
}

// serve is GET /api/v1/download?ticket=…: the ticket's request, answered
// as a file. It needs no token (a browser's download sends none): the
// ticket is the proof, usable once and for a minute. The ticket's query
// string is never logged. A download that cannot end whole is cut off, so
// that the browser marks it failed instead of keeping a file that looks
// complete.
func (d *downloads) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		httpkit.RefuseBody(w, r, httpkit.Errorf(http.StatusMethodNotAllowed, "method not allowed: use GET"))
		return
	}
	ctx, dl, err := d.reg.Take(r.Context(), r.URL.Query().Get("ticket"))
	if err != nil {
		httpkit.WriteError(w, errUnknownDownload)
		return
	}
	// A cancelled download stops at once, also in a write the browser
	// holds up (a full socket buffer).
	defer context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), download.ErrCancelled) {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now())
		}
	})()
	req := dl.Request()
	f := &fileWriter{ResponseWriter: w, dl: dl, name: req.Filename}
	if b := httpkit.WriteBatchOf(r); b != nil { // a stream's batched writes fail there, not in f
		ctx = httpkit.WithWriteBatch(ctx, &watchedBatch{WriteBatch: b, f: f})
	}
	inner, err := http.NewRequestWithContext(ctx, http.MethodPost, req.Route, bytes.NewReader(req.Body))
	if err != nil {
		dl.End(d.reg.Now(), false, "the request could not be made")
		httpkit.WriteError(w, fmt.Errorf("make the download's request: %w", err))
		return
	}
	// The body is in memory: no read of it waits on the connection, whose
	// read deadline (the body time limits) must stay the browser's own.
	inner.ContentLength = 0
	inner.Header.Set("Authorization", req.Authorization)
	inner.Header.Set("Content-Type", "application/json")
	inner.RemoteAddr, inner.TLS, inner.Host = r.RemoteAddr, r.TLS, r.Host
	inner.Proto, inner.ProtoMajor, inner.ProtoMinor = r.Proto, r.ProtoMajor, r.ProtoMinor
	ended := false
	defer func() {
		if !ended { // the route's chain cut the answer off (http.ErrAbortHandler)
			dl.End(d.reg.Now(), false, "the answer was cut off")
		}
	}()
	d.dispatch.ServeHTTP(f, inner)
	cancelled, reason := f.finish(ctx, r.Context())
	dl.End(d.reg.Now(), cancelled, reason)
	ended = true
	if f.status == http.StatusOK && (cancelled || reason != "") {
		panic(http.ErrAbortHandler)
	}
}

// fileWriter is the answer of a download: a 200 gets Content-Disposition:
// attachment, its lines pass through a Meter (no heartbeats; nothing from
// an error line on) and are reported to the download as they go.
type fileWriter struct {
	http.ResponseWriter
	dl       *download.Download
	name     string
	meter    download.Meter
	status   int
	errBody  []byte
	writeErr error
}

func (f *fileWriter) WriteHeader(status int) {
	if f.status != 0 {
		return
	}
	f.status = status
	h := f.Header()
	if status == http.StatusOK {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.name}))
		h.Del("Content-Length") // heartbeat lines are left out
	}
	kept := map[string]string{}
	for key := range h {
		if strings.HasPrefix(key, "Eventstore-") {
			kept[key] = h.Get(key)
		}
	}
	f.dl.Answered(status, kept)
	f.ResponseWriter.WriteHeader(status)
}

func (f *fileWriter) Write(p []byte) (int, error) {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	if f.status != http.StatusOK {
		if room := errorBodyLimit - len(f.errBody); room > 0 {
			f.errBody = append(f.errBody, p[:min(room, len(p))]...)
		}
		return f.ResponseWriter.Write(p)
	}
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	if out := f.meter.Pass(p); len(out) > 0 {
		if _, err := f.ResponseWriter.Write(out); err != nil {
			return 0, f.failed(err)
		}
	}
	f.dl.Sent(&f.meter)
	return len(p), nil
}

// FlushError sends what was written (the status first, if none was).
func (f *fileWriter) FlushError() error {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	return f.failed(http.NewResponseController(f.ResponseWriter).Flush())
}

// failed remembers the first error of sending the answer and returns err.
func (f *fileWriter) failed(err error) error {
	if err != nil && f.writeErr == nil {
		f.writeErr = err
	}
	return err
}

// watchedBatch is the connection's write batch of a download, whose
// failures its fileWriter learns.
type watchedBatch struct {
	httpkit.WriteBatch
	f *fileWriter
}

func (b *watchedBatch) Flush() error   { return b.f.failed(b.WriteBatch.Flush()) }
func (b *watchedBatch) Release() error { return b.f.failed(b.WriteBatch.Release()) }

// Unwrap returns the connection's writer for http.ResponseController.
func (f *fileWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// finish sends the held end of the answer and tells how the download
// ended: cancelled, or failed for reason, or whole (neither).
func (f *fileWriter) finish(ctx, client context.Context) (cancelled bool, reason string) {
	if errors.Is(context.Cause(ctx), download.ErrCancelled) {
		return true, ""
	}
	if rest := f.meter.Rest(); len(rest) > 0 && f.writeErr == nil {
		_, err := f.ResponseWriter.Write(rest)
		f.failed(err)
	}
	f.dl.Sent(&f.meter)
	message, failed := f.meter.Error()
	switch {
	case f.status == 0:
		return false, "the route sent no answer"
	case f.status != http.StatusOK:
		return false, strings.TrimSpace(string(f.errBody))
	}
	if !failed {
		_ = f.FlushError()
	}
	switch {
	case errors.Is(f.writeErr, os.ErrDeadlineExceeded):
		return false, "the browser stopped reading for too long"
	case client.Err() != nil || f.writeErr != nil:
		return false, "the browser closed the connection"
	case failed:
		return false, message
	}
	return false, ""
}
