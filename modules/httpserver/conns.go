package httpserver

import (
	"container/list"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ConnMetrics counts what the connection limit does.
type ConnMetrics interface {
	// ConnectionOpened and ConnectionClosed track the open connections.
	ConnectionOpened()
	ConnectionClosed()
	// ConnectionRefused counts a connection refused for want of room.
	ConnectionRefused()
	// ConnectionEvicted counts a waiting connection closed to make room.
	ConnectionEvicted()
}

// Pools of the connection limit.
const (
	regularPool = iota // every route
	probePool          // ping and health alone, beyond the limit
)

// ProbeConnectionLifetime is how long a connection of the probes' reserve
// may stay open: probes ask once and go, and a client that stalls there
// gives its place back soon.
const ProbeConnectionLifetime = 2 * time.Second

// connLimit bounds the open client connections of all listeners together:
// up to the limit for every route, and a reserve beyond it for ping and
// health alone, so that probes keep working while the limit is reached.
// When a new connection finds the limit reached, it takes the place of the
// connection that has waited longest for a request, if that one has waited
// EvictAfter or longer (a keep-alive connection between requests, or one
// whose request headers are still coming: nothing of it is lost), which is
// closed; so clients stalling in their headers cannot hold the places
// against newcomers for long. Else it takes a place in the reserve (which
// gives way in the same manner), and when there is none either it is
// refused: on plain HTTP with 503 `service unavailable: too many
// connections` written at once without reading the request, on TLS by
// closing it. A place is given back when its connection closes.
type connLimit struct {
	metrics ConnMetrics
	refusal []byte // the plain-HTTP answer of a refused connection

	mu    sync.Mutex
	pools [2]connPool
}

// connPool is one pool of places.
type connPool struct {
	capacity, open int
	waiting        list.List // of *limitedConn waiting for a request, the longest first
}

// EvictAfter is how long a connection must have waited for a request
// before a newcomer may take its place: a client sends its request at once,
// and a connection just accepted must have the time to be read even when
// the service is busy.
const EvictAfter = time.Second

// refusalWrite bounds the write of a refused connection's answer, which a
// new connection's empty send buffer takes at once.
const refusalWrite = 100 * time.Millisecond

func newConnLimit(limit, reserve int, serverHeader string, m ConnMetrics) *connLimit {
	const body = "service unavailable: too many connections\n"
	refusal := "HTTP/1.1 503 Service Unavailable\r\n" +
		"Cache-Control: " + cacheControl[0] + "\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Expires: 0\r\n" +
		"Retry-After: 1\r\n" +
		"Server: " + serverHeader + "\r\n" +
		"Surrogate-Control: no-store\r\n" +
		"X-Content-Type-Options: nosniff\r\n\r\n" + body
	l := &connLimit{metrics: m, refusal: []byte(refusal)}
	l.pools[regularPool].capacity, l.pools[probePool].capacity = limit, reserve
	return l
}

// limitedConn is an admitted connection holding a place in a pool.
type limitedConn struct {
	net.Conn
	limit *connLimit
	pool  int

	// Guarded by limit.mu:
	waiting *list.Element // its element in the pool's waiting list, nil while a request runs
	since   time.Time     // when it began to wait
	evicted bool          // its place was given to another connection
	closed  bool
}

// admit gives c a place, taking it from the connection waiting longest if
// need be, or refuses it (nil).
func (l *connLimit) admit(c net.Conn) *limitedConn {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for pool := range l.pools {
		p := &l.pools[pool]
		if p.open >= p.capacity {
			l.evictLocked(p, now)
		}
		if p.open < p.capacity {
			p.open++
			lc := &limitedConn{Conn: c, limit: l, pool: pool, since: now}
			lc.waiting = p.waiting.PushBack(lc)
			if pool == probePool {
				time.AfterFunc(ProbeConnectionLifetime, func() { _ = lc.Close() })
			}
			l.metrics.ConnectionOpened()
			return lc
		}
	}
	return nil
}

// evictLocked gives up the place of p's connection that has waited
// longest, if it has waited EvictAfter by now: reads of it fail from now
// on, so that the server closes it, and its place is free at once.
func (l *connLimit) evictLocked(p *connPool, now time.Time) {
	front := p.waiting.Front()
	if front == nil || now.Sub(front.Value.(*limitedConn).since) < EvictAfter {
		return
	}
	lc := front.Value.(*limitedConn)
	p.waiting.Remove(front)
	lc.waiting, lc.evicted = nil, true
	p.open--
	_ = lc.Conn.SetReadDeadline(time.Now())
	l.metrics.ConnectionEvicted()
}

// refuse answers a connection that found no place and closes it; plain
// tells that it speaks plain HTTP (a TLS connection is closed without an
// answer: a handshake would cost more than the refusal saves). The request
// is not read: closing with it unread resets the connection, but a client's
// kernel keeps the answer it received before the reset for it to read.
func (l *connLimit) refuse(c net.Conn, plain bool) {
	l.metrics.ConnectionRefused()
	if plain {
		_ = c.SetWriteDeadline(time.Now().Add(refusalWrite))
		_, _ = c.Write(l.refusal)
	}
	_ = c.Close()
}

// track follows the states the server reports of a connection: one that
// waits for a request may give its place to a newcomer, one running a
// request may not.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	lc := limitedOf(c)
	if lc == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case lc.closed:
	case lc.evicted:
		// A request that began as its place was given away may run; the
		// connection ends when it waits again.
		if state == http.StateIdle {
			_ = lc.Conn.SetReadDeadline(time.Now())
		}
	case state == http.StateIdle && lc.waiting == nil:
		lc.waiting, lc.since = l.pools[lc.pool].waiting.PushBack(lc), time.Now()
	case state == http.StateActive && lc.waiting != nil:
		l.pools[lc.pool].waiting.Remove(lc.waiting)
		lc.waiting = nil
	}
}

// Close closes the connection and gives its place back.
func (lc *limitedConn) Close() error {
	l := lc.limit
	l.mu.Lock()
	if !lc.closed {
		lc.closed = true
		if lc.waiting != nil {
			l.pools[lc.pool].waiting.Remove(lc.waiting)
			lc.waiting = nil
		}
		if !lc.evicted {
			l.pools[lc.pool].open--
		}
		l.metrics.ConnectionClosed()
	}
	l.mu.Unlock()
	return lc.Conn.Close()
}

// CloseWrite shuts down the writing side, as *net.TCPConn does.
func (lc *limitedConn) CloseWrite() error {
	if cw, ok := lc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// limitedOf finds the admitted connection under the one the server holds.
func limitedOf(c net.Conn) *limitedConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if b, ok := c.(*batchConn); ok {
		c = b.Conn
	}
	lc, _ := c.(*limitedConn)
	return lc
}

type probeOnlyKey struct{}

// withPool is part of the server's ConnContext: the requests of a
// connection of the probes' reserve are marked, so that only ping and
// health answer them.
func withPool(ctx context.Context, c net.Conn) context.Context {
	if lc := limitedOf(c); lc != nil && lc.pool == probePool {
		return context.WithValue(ctx, probeOnlyKey{}, true)
	}
	return ctx
}

// probeOnly reports whether r came on a connection of the probes' reserve.
func probeOnly(r *http.Request) bool {
	only, _ := r.Context().Value(probeOnlyKey{}).(bool)
	return only
}
