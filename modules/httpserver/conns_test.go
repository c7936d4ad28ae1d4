package httpserver

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// connCounts is a ConnMetrics that counts.
type connCounts struct{ open, refused, evicted atomic.Int64 }

func (c *connCounts) ConnectionOpened()  { c.open.Add(1) }
func (c *connCounts) ConnectionClosed()  { c.open.Add(-1) }
func (c *connCounts) ConnectionRefused() { c.refused.Add(1) }
func (c *connCounts) ConnectionEvicted() { c.evicted.Add(1) }

// limited serves the test routes behind a connection limit.
func limited(t *testing.T, limit, reserve int) (string, *connCounts) {
	t.Helper()
	counts := &connCounts{}
	h := bodyHandler(t, BodyTimes{Idle: time.Minute, Total: time.Minute}, context.Background())
	return serve(t, h, newConnLimit(limit, reserve, ServerHeader("1.2.3"), counts)), counts
}

// block starts a request that runs until its connection closes.
func block(t *testing.T, addr string) *rawConn {
	t.Helper()
	c := dial(t, addr)
	c.send(t, post("/api/v1/block", 0, true, ""))
	time.Sleep(50 * time.Millisecond) // the server reads it and runs it
	return c
}

func ping(t *testing.T, c *rawConn) (int, string) {
	t.Helper()
	c.send(t, "GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n")
	status, _, body := c.answer(t, 2*time.Second)
	return status, body
}

// TestConnectionReserveAnswersProbesAlone: with the limit reached by
// running requests, a new connection lands in the reserve, where ping
// answers and every other route 503.
func TestConnectionReserveAnswersProbesAlone(t *testing.T) {
	addr, counts := limited(t, 1, 2)
	block(t, addr)
	probe := dial(t, addr)
	if status, body := ping(t, probe); status != 200 || body != "pong" {
		t.Fatalf("ping in the reserve: %d %q", status, body)
	}
	other := dial(t, addr)
	other.send(t, post("/api/v1/read", 2, true, "{}"))
	status, _, body := other.answer(t, 2*time.Second)
	if status != 503 || body != "service unavailable: too many connections\n" {
		t.Fatalf("another route in the reserve: %d %q", status, body)
	}
	// The reserve's connections end by themselves.
	probe.closed(t, ProbeConnectionLifetime+time.Second)
	if counts.refused.Load() != 0 || counts.evicted.Load() != 0 {
		t.Fatalf("refused %d, evicted %d", counts.refused.Load(), counts.evicted.Load())
	}
}

// TestConnectionRefusedWithoutRoom: with every place taken by running
// requests, a new connection gets the 503 at once, without sending a
// request, and is closed.
func TestConnectionRefusedWithoutRoom(t *testing.T) {
	addr, counts := limited(t, 1, 0)
	block(t, addr)
	c := dial(t, addr)
	status, closing, body := c.answer(t, 2*time.Second)
	if status != 503 || !closing || body != "service unavailable: too many connections\n" {
		t.Fatalf("a connection without room: %d close %v %q", status, closing, body)
	}
	c.closed(t, 2*time.Second)
	if counts.refused.Load() != 1 || counts.open.Load() != 1 {
		t.Fatalf("refused %d, open %d", counts.refused.Load(), counts.open.Load())
	}
}

// TestWaitingConnectionGivesWay: when the limit is reached, a new
// connection takes the place of the one waiting longest for a request, once
// that one has waited EvictAfter: one that stalls in its headers, then an
// idle keep-alive one; none that runs a request.
func TestWaitingConnectionGivesWay(t *testing.T) {
	addr, counts := limited(t, 2, 0)
	running := block(t, addr)
	stalled := dial(t, addr)
	stalled.send(t, "GET /api/v1/pi") // and never more
	// Too early: the stalled one has not waited long enough.
	early := dial(t, addr)
	if status, _, body := early.answer(t, 2*time.Second); status != 503 || body != "service unavailable: too many connections\n" {
		t.Fatalf("a newcomer before the stalled one waited EvictAfter: %d %q", status, body)
	}
	time.Sleep(EvictAfter)
	idle := dial(t, addr)
	if status, _ := ping(t, idle); status != 200 {
		t.Fatalf("ping: %d", status)
	}
	// The stalled one waited longest.
	stalled.closed(t, 2*time.Second)
	// The idle one goes next, for another newcomer.
	time.Sleep(EvictAfter)
	newcomer := dial(t, addr)
	if status, _ := ping(t, newcomer); status != 200 {
		t.Fatalf("the newcomer's ping: %d", status)
	}
	if status, _ := ping(t, newcomer); status != 200 {
		t.Fatalf("the newcomer's second ping: %d", status)
	}
	idle.closed(t, 2*time.Second)
	// The running request was never disturbed.
	_ = running.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := running.r.Read(make([]byte, 1)); err == nil || err == io.EOF {
		t.Fatalf("the running request's connection: %v", err)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("the running request's connection: %v", err)
	}
	if counts.evicted.Load() != 2 || counts.refused.Load() != 1 {
		t.Fatalf("evicted %d, refused %d", counts.evicted.Load(), counts.refused.Load())
	}
}
