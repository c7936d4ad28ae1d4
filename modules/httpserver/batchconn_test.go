package httpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// recordingListener accepts connections that keep a copy of every write.
type recordingListener struct {
	net.Listener
	mu     sync.Mutex
	writes [][]byte
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return recordingConn{Conn: c, l: l}, nil
}

func (l *recordingListener) recorded() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, bytes.Clone(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// testLines returns n lines of sizes on both sides of the HTTP server's
// buffers (2 KiB, 4 KiB) and of BatchBytes.
func testLines(n int) [][]byte {
	sizes := []int{40, 500, 2046, 2047, 2048, 4095, 4096, 5000, 16 << 10, 20000, 70000, 300}
	lines := make([][]byte, n)
	for i := range lines {
		prefix := fmt.Sprintf(`{"type":"row","payload":{"i":%d,"pad":"`, i)
		pad := max(sizes[i%len(sizes)]-len(prefix)-4, 0)
		lines[i] = []byte(prefix + strings.Repeat("x", pad) + `"}}` + "\n")
	}
	return lines
}

// readChunks reads a chunked HTTP/1.1 response from r: the header block,
// then every chunk with the offset its size line starts at.
func readChunks(t *testing.T, raw []byte) (chunks [][]byte, starts []int) {
	t.Helper()
	header := bytes.Index(raw, []byte("\r\n\r\n"))
	if header < 0 || !bytes.Contains(raw[:header], []byte("Transfer-Encoding: chunked")) {
		t.Fatalf("not a chunked response: %.300q", raw)
	}
	pos := header + 4
	r := bufio.NewReader(bytes.NewReader(raw[pos:]))
	for {
		starts = append(starts, pos)
		sizeLine, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("chunk size line at %d: %v", pos, err)
		}
		size, err := strconv.ParseInt(strings.TrimSuffix(sizeLine, "\r\n"), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q", sizeLine)
		}
		chunk := make([]byte, size+2)
		if _, err := io.ReadFull(r, chunk); err != nil || !bytes.HasSuffix(chunk, []byte("\r\n")) {
			t.Fatalf("chunk at %d: %v", pos, err)
		}
		pos += len(sizeLine) + len(chunk)
		if size == 0 {
			return chunks, starts
		}
		chunks = append(chunks, chunk[:size])
	}
}

func TestBatchedLinesStayChunksOfTheirOwn(t *testing.T) {
	lines := testLines(300)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: ln}
	srv := &http.Server{ConnContext: withWriteBatch, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := httpkit.StartStream(w, r)
		err := s.Batch(func() error {
			for _, line := range lines {
				if err := s.WriteLine(line); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("batch: %v", err)
		}
	})}
	go func() { _ = srv.Serve(newBatchListener(rec, nil, true)) }()
	defer srv.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(conn, "POST /stream HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}

	chunks, starts := readChunks(t, raw)
	if len(chunks) != len(lines) {
		t.Fatalf("%d chunks for %d lines", len(chunks), len(lines))
	}
	for i, c := range chunks {
		if !bytes.Equal(c, lines[i]) {
			t.Fatalf("chunk %d is not line %d: %d bytes, %.80q", i, i, len(c), c)
		}
	}
	// Every socket write ends where a chunk ends (or the headers, or the
	// response): no chunk is split over writes, and a write holds more than
	// one chunk only up to BatchBytes.
	boundary := map[int]bool{len(raw): true}
	for _, s := range starts {
		boundary[s] = true
	}
	writes := rec.recorded()
	at := 0
	for i, w := range writes {
		inside := 0 // chunks starting inside the write
		for _, s := range starts {
			if s > at && s < at+len(w) {
				inside++
			}
		}
		at += len(w)
		if !boundary[at] {
			t.Fatalf("write %d of %d bytes ends at %d, inside a chunk", i, len(w), at)
		}
		if len(w) > httpkit.BatchBytes && inside > 0 {
			t.Fatalf("write %d holds %d bytes, more than one chunk", i, len(w))
		}
	}
	if at != len(raw) {
		t.Fatalf("the server wrote %d bytes, the client read %d", at, len(raw))
	}
	if len(writes) > len(lines)/2 {
		t.Fatalf("%d socket writes for %d lines: the lines were not batched", len(writes), len(lines))
	}
	t.Logf("%d lines, %d bytes, %d socket writes", len(lines), len(raw), len(writes))
}

// failingConn is a connection whose writes fail.
type failingConn struct {
	net.Conn
	writes int
}

func (c *failingConn) Write([]byte) (int, error) {
	c.writes++
	return 0, errors.New("connection reset")
}

func TestBatchConnKeepsTheErrorOfAHeldWrite(t *testing.T) {
	under := &failingConn{}
	c := &batchConn{Conn: under, buffers: newBatchListener(nil, nil, true).buffers}
	c.Hold()
	if n, err := c.Write([]byte("5\r\nline\n\r\n")); n != 10 || err != nil || c.Held() != 10 || under.writes != 0 {
		t.Fatalf("held write: %d, %v, held %d, %d writes underneath", n, err, c.Held(), under.writes)
	}
	if err := c.Flush(); err == nil || c.Held() != 0 {
		t.Fatalf("flush: %v, held %d", err, c.Held())
	}
	if err := c.Release(); err == nil {
		t.Fatal("release after a failed flush succeeded")
	}
	if _, err := c.Write([]byte("0\r\n\r\n")); err == nil || under.writes != 1 {
		t.Fatalf("a write after the failure: %v, %d writes underneath", err, under.writes)
	}
}

func TestServerBatchesHTTP1Only(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "%s %v", r.Proto, httpkit.WriteBatchOf(r) != nil)
	})
	s := New(config.Config{HTTP: config.Listener{Enabled: true}}, zap.NewNop(), handler, "test", nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	url := strings.Replace(s.Listeners()[0], "0.0.0.0", "127.0.0.1", 1)
	if got := get(t, url); got != "HTTP/1.1 true" {
		t.Fatalf("HTTP/1.1: %q", got)
	}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: protocols}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); string(body) != "HTTP/2.0 false" {
		t.Fatalf("h2c: %q", body)
	}
}
