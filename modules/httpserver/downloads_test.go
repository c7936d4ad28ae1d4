package httpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/download"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
)

// streamRoute answers {"lines":n,"heartbeats":true,"fail":true,"block":true}
// with n row lines, a heartbeat after each row when asked, an error line at
// the end when asked, and, when asked, waits for the request's end.
func streamRoute(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Lines      int
		Heartbeats bool
		Fail       bool
		Block      bool
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		httpkit.WriteError(w, httpkit.Errorf(400, "invalid request: %v", err))
		return
	}
	w.Header().Set("Eventstore-Lines", fmt.Sprint(req.Lines))
	s := httpkit.StartStream(w, r)
	for i := range req.Lines {
		if err := s.Line("row", []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			return
		}
		if req.Heartbeats {
			_ = s.Line("heartbeat", []byte(`{}`))
		}
	}
	if req.Block {
		<-r.Context().Done()
		return
	}
	if req.Fail {
		s.Error("storage: read failed")
	}
}

type downloadFixture struct {
	srv  *httptest.Server
	logs *observer.ObservedLogs
	mu   sync.Mutex
	at   time.Time
}

func newDownloadFixture(t *testing.T) *downloadFixture {
	t.Helper()
	f := &downloadFixture{at: time.Now()}
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.DebugLevel)
	f.logs = logs
	log := zap.New(core)
	a, err := auth.New(auth.SingleToken(token), log, reg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.at
	}
	h, err := NewHandler(HandlerOptions{
		Routes: []httpkit.Route{
			{Method: "POST", Path: "/api/v1/stream", Permission: httpkit.PermitRead, Handler: http.HandlerFunc(streamRoute), Download: "stream.ndjson"},
			{Method: "POST", Path: "/api/v1/other", Handler: http.HandlerFunc(streamRoute)},
		},
		Version:        "1.2.3",
		MaxRequestSize: 1 << 20,
		ShuttingDown:   func() bool { return false },
		Auth:           a,
		Metrics:        m,
		Log:            log,
		Downloads:      download.NewRegistry(download.Options{Now: clock}),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *downloadFixture) advance(d time.Duration) {
	f.mu.Lock()
	f.at = f.at.Add(d)
	f.mu.Unlock()
}

func (f *downloadFixture) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ticket creates a download of /api/v1/stream with body and returns its ticket and URL.
func (f *downloadFixture) ticket(t *testing.T, body string) (string, string) {
	t.Helper()
	status, answer := f.post(t, CreateDownloadPath, `{"route":"/api/v1/stream","body":`+body+`}`)
	if status != 200 {
		t.Fatalf("create-download: %d %s", status, answer)
	}
	var created struct{ Ticket, URL, Expires string }
	if err := json.Unmarshal([]byte(answer), &created); err != nil {
		t.Fatal(err)
	}
	if len(created.Ticket) != 43 || created.URL != DownloadPath+"?ticket="+created.Ticket {
		t.Fatalf("create-download answered %s", answer)
	}
	return created.Ticket, created.URL
}

func (f *downloadFixture) status(t *testing.T, ticket string) download.Status {
	t.Helper()
	code, answer := f.post(t, ReadDownloadPath, `{"ticket":"`+ticket+`"}`)
	if code != 200 {
		t.Fatalf("read-download: %d %s", code, answer)
	}
	var s download.Status
	if err := json.Unmarshal([]byte(answer), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDownloadSavesTheAnswerOnce(t *testing.T) {
	f := newDownloadFixture(t)
	ticket, url := f.ticket(t, `{"lines":1000,"heartbeats":true}`)
	if s := f.status(t, ticket); s.State != download.Pending || s.Filename != "stream.ndjson" {
		t.Fatalf("before the download: %+v", s)
	}
	resp, err := http.Get(f.srv.URL + url) // no token: the ticket stands for it
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename=stream.ndjson` {
		t.Errorf("Content-Disposition %q", got)
	}
	var want strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&want, `{"type":"row","payload":{"i":%d}}`+"\n", i)
	}
	if string(body) != want.String() {
		t.Fatalf("the file is not the rows without heartbeats: %d bytes, want %d", len(body), want.Len())
	}
	s := f.status(t, ticket)
	if s.State != download.Done || s.Status != 200 || s.Bytes != int64(want.Len()) || s.Lines["row"] != 1000 || s.Lines["heartbeat"] != 0 || s.Headers["Eventstore-Lines"] != "1000" || s.Ended == nil {
		t.Errorf("after the download: %+v", s)
	}
	again, err := http.Get(f.srv.URL + url)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(again.Body)
	again.Body.Close()
	if again.StatusCode != 404 || string(text) != "not found: unknown download\n" {
		t.Errorf("second use: %d %q", again.StatusCode, text)
	}
	for _, e := range f.logs.All() {
		for _, field := range e.Context {
			if strings.Contains(field.String, ticket) {
				t.Errorf("the ticket is logged: %s %v", e.Message, field)
			}
		}
	}
}

func TestDownloadCutOffAtAnErrorLine(t *testing.T) {
	f := newDownloadFixture(t)
	ticket, url := f.ticket(t, `{"lines":3,"fail":true}`)
	resp, err := http.Get(f.srv.URL + url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("the failed download ended normally with %q", body)
	}
	if strings.Contains(string(body), "error") {
		t.Errorf("the file holds the error line: %q", body)
	}
	s := f.status(t, ticket)
	if s.State != download.Failed || s.Error != "storage: read failed" || s.Lines["row"] != 3 {
		t.Errorf("status %+v", s)
	}
}

func TestDownloadRefusals(t *testing.T) {
	f := newDownloadFixture(t)
	for _, c := range []struct{ body, want string }{
		{`{"route":"/api/v1/other"}`, "invalid request: route '/api/v1/other' has no downloads\n"},
		{`{"route":"/api/v1/stream","filename":"../x"}`, "invalid request: invalid file name '../x'\n"},
		{`{"route":`, ""},
	} {
		status, answer := f.post(t, CreateDownloadPath, c.body)
		if status != 400 || c.want != "" && answer != c.want {
			t.Errorf("%s: %d %q", c.body, status, answer)
		}
	}
	if status, answer := f.post(t, ReadDownloadPath, `{"ticket":"nope"}`); status != 404 || answer != "not found: unknown download\n" {
		t.Errorf("read-download of no ticket: %d %q", status, answer)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+CreateDownloadPath, strings.NewReader(`{"route":"/api/v1/stream"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("create-download without the token: %d", resp.StatusCode)
	}
}

func TestDownloadTicketExpires(t *testing.T) {
	f := newDownloadFixture(t)
	ticket, url := f.ticket(t, `{"lines":1}`)
	f.advance(download.DefaultOptions.Unused + time.Second)
	resp, err := http.Get(f.srv.URL + url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("an expired ticket: %d", resp.StatusCode)
	}
	if s := f.status(t, ticket); s.State != download.Expired {
		t.Errorf("status %+v", s)
	}
}

func TestDownloadCancelled(t *testing.T) {
	f := newDownloadFixture(t)
	ticket, url := f.ticket(t, `{"lines":2,"block":true}`)
	resp, err := http.Get(f.srv.URL + url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for f.status(t, ticket).Lines["row"] < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code, answer := f.post(t, CancelDownloadPath, `{"ticket":"`+ticket+`"}`); code != 200 {
		t.Fatalf("cancel-download: %d %s", code, answer)
	}
	select {
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("the cancelled download ended normally (%v)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled download goes on")
	}
	if s := f.status(t, ticket); s.State != download.Cancelled {
		t.Errorf("status %+v", s)
	}
}

func TestDownloadClientGone(t *testing.T) {
	f := newDownloadFixture(t)
	ticket, url := f.ticket(t, `{"lines":1,"block":true}`)
	resp, err := http.Get(f.srv.URL + url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	s := f.status(t, ticket)
	for s.State == download.Running && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		s = f.status(t, ticket)
	}
	if s.State != download.Failed || s.Error != "the browser closed the connection" {
		t.Errorf("status %+v", s)
	}
}

// TestDownloadClientGoneWhileWriting: a browser that goes away while the
// route writes (the route ends at its first failed write, without waiting
// for the request's end) leaves a failed download, never a done one.
func TestDownloadClientGoneWhileWriting(t *testing.T) {
	f := newDownloadFixture(t)
	ticket, url := f.ticket(t, `{"lines":5000000}`)
	resp, err := http.Get(f.srv.URL + url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	s := f.status(t, ticket)
	for s.State == download.Running && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		s = f.status(t, ticket)
	}
	if s.State != download.Failed || s.Error != "the browser closed the connection" || s.Lines["row"] >= 5000000 {
		t.Errorf("status %+v", s)
	}
}
