package httpserver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/metrics"
)

// bodyHandler returns the server's handler with a route that reads its
// body (/api/v1/read) and a restore route, the given body limits, and a
// stop phase that begins when stopping ends.
func bodyHandler(t testing.TB, times BodyTimes, stopping context.Context) http.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	a, err := auth.New(auth.SingleToken(token), zap.NewNop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.NewHTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := httpkit.ReadBody(r)
		if err != nil {
			httpkit.WriteError(w, err)
			return
		}
		_, _ = io.WriteString(w, "read "+string(body))
	})
	h, err := NewHandler(HandlerOptions{
		Routes: []httpkit.Route{
			{Method: "GET", Path: "/api/v1/ping", Public: true, Probe: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "pong") })},
			{Method: "POST", Path: "/api/v1/read", Handler: read},
			{Method: "POST", Path: "/api/v1/block", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })},
			{Method: "POST", Path: "/api/v1/restore", UnlimitedBody: true, DuringRestore: true, Handler: read},
		},
		Version:        "1.2.3",
		MaxRequestSize: 1 << 20,
		BodyTimes:      times,
		Stopping:       stopping,
		ShuttingDown:   func() bool { return false },
		Auth:           a,
		Metrics:        m,
		Log:            zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serve runs h on a loopback socket, behind limit unless it is nil, and
// returns the socket's address.
func serve(t testing.TB, h http.Handler, limit *connLimit) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnContext: connContext, ReadHeaderTimeout: ReadHeaderTimeout}
	if limit != nil {
		srv.ConnState = limit.track
	}
	go func() { _ = srv.Serve(newBatchListener(ln, limit, true)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// rawConn is a client connection that writes requests by hand.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// answer reads the next response within wait: its status, whether it
// announces the end of the connection (Connection: close), and its body.
func (c *rawConn) answer(t *testing.T, wait time.Duration) (int, bool, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", wait, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Close, string(body)
}

// closed checks that the server closes the connection within wait (a
// connection closed in the middle of its request headers may get Go's
// plain 400 first).
func (c *rawConn) closed(t *testing.T, wait time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	if _, err := io.Copy(io.Discard, c.r); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the connection is still open after %v", wait)
		}
	}
}

func post(path string, contentLength int, authorized bool, first string) string {
	auth := ""
	if authorized {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: " + strconv.Itoa(contentLength) + "\r\n\r\n" + first
}

func TestBodyTimeLimits(t *testing.T) {
	times := BodyTimes{Idle: 300 * time.Millisecond, Total: 900 * time.Millisecond}
	addr := serve(t, bodyHandler(t, times, context.Background()), nil)
	trickle := func(c *rawConn, every time.Duration, n int) {
		for i := 0; i < n; i++ {
			time.Sleep(every)
			if _, err := io.WriteString(c, "x"); err != nil {
				return
			}
		}
	}
	cases := []struct {
		name   string
		path   string
		client func(c *rawConn)
		status int
		body   string
	}{
		{"a body that stalls", "/api/v1/read", func(c *rawConn) {}, 408, "request timeout: the request body stalled\n"},
		{"a body that trickles past the total limit", "/api/v1/read", func(c *rawConn) { trickle(c, 100*time.Millisecond, 40) }, 408, "request timeout: the request body took too long\n"},
		{"a restore may trickle for longer", "/api/v1/restore", func(c *rawConn) { trickle(c, 100*time.Millisecond, 12) }, 200, "read xxxxxxxxxxxx"},
		{"a restore that stalls", "/api/v1/restore", func(c *rawConn) {}, 408, "request timeout: the request body stalled\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(t, post(tc.path, 12, true, ""))
			go tc.client(c)
			status, _, body := c.answer(t, 10*time.Second)
			if status != tc.status || body != tc.body {
				t.Fatalf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
			if tc.status == 408 {
				c.closed(t, 2*time.Second)
			}
		})
	}
}

// TestUnreadBodiesAreNotAwaited: an answer given before the body is read
// (401 without the token, 404, 405) comes at once, and the connection is
// closed after it instead of waiting for a body that never comes.
func TestUnreadBodiesAreNotAwaited(t *testing.T) {
	addr := serve(t, bodyHandler(t, BodyTimes{Idle: time.Minute, Total: time.Minute}, context.Background()), nil)
	cases := []struct {
		name, request string
		status        int
	}{
		{"no token", post("/api/v1/read", 1000, false, ""), 401},
		{"no token, part of the body sent", post("/api/v1/read", 1000, false, "{\"ev"), 401},
		{"an unknown route", post("/api/v1/nope", 1000, true, ""), 404},
		{"a wrong method", "PUT /api/v1/read HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nContent-Length: 1000\r\n\r\n", 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(t, tc.request)
			if status, closing, _ := c.answer(t, 2*time.Second); status != tc.status || !closing {
				t.Fatalf("got %d, Connection: close %v; want %d, true", status, closing, tc.status)
			}
			c.closed(t, 2*time.Second)
		})
	}
	// Without a body the connection stays for the next request.
	c := dial(t, addr)
	c.send(t, "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
	if status, closing, _ := c.answer(t, 2*time.Second); status != 401 || closing {
		t.Fatalf("401 without a body: %d, Connection: close %v", status, closing)
	}
	c.send(t, "GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n")
	if status, _, body := c.answer(t, 2*time.Second); status != 200 || body != "pong" {
		t.Fatalf("the next request: %d %q", status, body)
	}
}

// TestStopCutsBodies: at the stop phase a body still being read is cut off
// after httpkit.StopGrace, and one that arrives then too.
func TestStopCutsBodies(t *testing.T) {
	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	addr := serve(t, bodyHandler(t, BodyTimes{Idle: time.Minute, Total: time.Minute}, stopping), nil)
	before := dial(t, addr)
	before.send(t, post("/api/v1/read", 10, true, "12"))
	time.Sleep(100 * time.Millisecond)
	stop()
	after := dial(t, addr)
	after.send(t, post("/api/v1/restore", 10, true, "12"))
	for _, c := range []*rawConn{before, after} {
		status, _, body := c.answer(t, 5*time.Second)
		if status != 503 || body != "service unavailable: shutting down\n" {
			t.Fatalf("a body at the stop phase: %d %q", status, body)
		}
	}
}
