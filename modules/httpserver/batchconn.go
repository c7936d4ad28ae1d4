package httpserver

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// batchListener accepts the connections the connection limit admits (it
// answers the others), whose writes a stream can hold back and send
// together (httpkit.WriteBatch).
type batchListener struct {
	net.Listener
	limit   *connLimit // nil: no limit
	plain   bool       // the listener speaks plain HTTP, not TLS
	buffers *sync.Pool // of *[]byte: buffers of held writes, shared by the connections while they hold
}

func newBatchListener(ln net.Listener, limit *connLimit, plain bool) batchListener {
	return batchListener{Listener: ln, limit: limit, plain: plain, buffers: &sync.Pool{New: func() any { return new([]byte) }}}
}

func (l batchListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.limit != nil {
			lc := l.limit.admit(c)
			if lc == nil {
				l.limit.refuse(c, l.plain)
				continue
			}
			c = lc
		}
		return &batchConn{Conn: c, buffers: l.buffers}, nil
	}
}

// connContext is the server's ConnContext: the requests of a connection
// get its write batch and its pool.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return withPool(withWriteBatch(ctx, c), c)
}

// withWriteBatch gives the requests of a connection its write batch.
func withWriteBatch(ctx context.Context, c net.Conn) context.Context {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if b, ok := c.(*batchConn); ok {
		return httpkit.WithWriteBatch(ctx, b)
	}
	return ctx
}

// maxPooledBatch is the largest buffer given back to the pool; a larger
// one (a batch with a huge line) is left to the garbage collector.
const maxPooledBatch = 256 << 10

// batchConn is a server connection implementing httpkit.WriteBatch. While
// it holds, every write of the HTTP server is appended to a buffer, whole
// and in order, and reported as written; Flush and Release send the buffer
// with one write. An error of that write is returned by every later write
// (it may have cut the stream inside a chunk), so the server learns of it
// and does not reuse the connection. Hold, Flush
// and Release are for the goroutine serving the connection's HTTP/1
// requests, which is the one writing to it.
type batchConn struct {
	net.Conn
	buffers *sync.Pool
	held    *[]byte // the buffer while holding, else nil
	err     error   // of a held write that failed
}

func (c *batchConn) Write(p []byte) (int, error) {
	switch {
	case c.err != nil:
		return 0, c.err // the stream may have been cut inside a chunk
	case c.held == nil:
		return c.Conn.Write(p)
	}
	*c.held = append(*c.held, p...)
	return len(p), nil
}

// Hold starts collecting the writes.
func (c *batchConn) Hold() {
	if c.held == nil {
		c.held = c.buffers.Get().(*[]byte)
	}
}

// Held returns the number of bytes collected.
func (c *batchConn) Held() int {
	if c.held == nil {
		return 0
	}
	return len(*c.held)
}

// Flush sends the collected bytes with one write.
func (c *batchConn) Flush() error {
	if c.held == nil || len(*c.held) == 0 {
		return c.err
	}
	if c.err == nil {
		_, c.err = c.Conn.Write(*c.held)
	}
	*c.held = (*c.held)[:0]
	return c.err
}

// Release sends the collected bytes and stops collecting.
func (c *batchConn) Release() error {
	err := c.Flush()
	if c.held != nil {
		if cap(*c.held) <= maxPooledBatch {
			c.buffers.Put(c.held)
		}
		c.held = nil
	}
	return err
}

// CloseWrite shuts down the writing side, as *net.TCPConn does; the server
// uses it to end a connection gracefully.
func (c *batchConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom copies r to the connection with the underlying connection's
// ReadFrom (sendfile, splice) where it has one.
func (c *batchConn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return io.Copy(c.Conn, r)
}
