package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// postRaw sends a POST of body to path over conn, as HTTP/1.1 with
// Connection: close.
func postRaw(conn net.Conn, path, body string) {
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, harness.Token, len(body), body)
}

// readChunked reads a 200 response with a chunked body from r and returns
// the chunks, as they were framed on the wire.
func readChunked(t *testing.T, r *bufio.Reader) [][]byte {
	t.Helper()
	status, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		t.Fatalf("status line %q, %v", status, err)
	}
	chunked := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
		chunked = chunked || strings.EqualFold(strings.TrimSpace(line), "Transfer-Encoding: chunked")
	}
	if !chunked {
		t.Fatal("the body is not chunked")
	}
	var chunks [][]byte
	for {
		sizeLine, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		size, err := strconv.ParseInt(strings.TrimSuffix(sizeLine, "\r\n"), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q", sizeLine)
		}
		chunk := make([]byte, size+2)
		if _, err := io.ReadFull(r, chunk); err != nil || !bytes.HasSuffix(chunk, []byte("\r\n")) {
			t.Fatalf("chunk %d of %d bytes: %v", len(chunks), size, err)
		}
		if size == 0 {
			return chunks
		}
		chunks = append(chunks, chunk[:size])
	}
}

// writeMixedEvents writes n events on subject, every tenth with 5–70 KB of
// data, three in ten tiny, the others up to 1.5 KB, and returns their ids.
func writeMixedEvents(t *testing.T, inst *harness.Instance, subject string, n int) []string {
	t.Helper()
	var ids, batch []string
	flush := func() {
		for _, e := range mustWrite(t, inst, `{"events":[`+strings.Join(batch, ",")+`]}`) {
			ids = append(ids, e.ID)
		}
		batch = batch[:0]
	}
	for i := 0; i < n; i++ {
		pad := 100 + i*37%1400
		switch {
		case i%10 == 0:
			pad = 5000 + i*7919%65000
		case i%10 <= 3:
			pad = 0
		}
		batch = append(batch, fmt.Sprintf(`{"source":"https://chunks.example","subject":%q,"type":"io.example.chunk","data":{"i":%d,"pad":%q}}`,
			subject, i, strings.Repeat("x", pad)))
		if len(batch) == 200 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	return ids
}

// chunkIDs checks that every chunk is exactly one complete event line and
// returns the events' ids.
func chunkIDs(t *testing.T, chunks [][]byte) []string {
	t.Helper()
	ids := make([]string, 0, len(chunks))
	for i, c := range chunks {
		var line struct {
			Type    string
			Payload struct{ ID string }
		}
		if bytes.IndexByte(c, '\n') != len(c)-1 || !bytes.HasSuffix(c, []byte("}\n")) || json.Unmarshal(c, &line) != nil || line.Type != "event" {
			t.Fatalf("chunk %d is not exactly one line (%d bytes): %.120q … %.40q", i, len(c), c, c[max(len(c)-40, 0):])
		}
		ids = append(ids, line.Payload.ID)
	}
	return ids
}

// curlReport is what testdata/curl_chunks.py prints.
type curlReport struct {
	Status, Callbacks, MaxCallback, Shared, Whole, Torn, TornSmall int
	IDs                                                            []string
	Bad                                                            []string
}

// debianPython is Debian's interpreter, which python3-pycurl belongs to
// (a python3 earlier on PATH may lack it).
const debianPython = "/usr/bin/python3"

// readWithLibcurl reads read-events of subject from baseURL through
// libcurl's write callback.
func readWithLibcurl(t *testing.T, baseURL, subject string) curlReport {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import pycurl").Run(); err != nil {
		t.Fatalf("Debian's python3-pycurl is required for this test (scripts/test installs it): %v", err)
	}
	args := []string{filepath.Join("testdata", "curl_chunks.py"), baseURL + "/api/v1/read-events", harness.Token, fmt.Sprintf(`{"subject":%q}`, subject)}
	if strings.HasPrefix(baseURL, "https:") {
		args = append(args, "insecure")
	}
	cmd := exec.Command(debianPython, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl_chunks.py: %v\n%s", err, stderr.String())
	}
	var report curlReport
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("curl_chunks.py printed %.300q: %v", out, err)
	}
	return report
}

// TestStreamOneLinePerChunkForLibcurlAndGo reads a subject of a few
// thousand events of very different sizes, over HTTP/1.1 and over HTTPS
// with HTTP/1.1, as the framed chunks on the wire (every chunk must be
// exactly one complete line) and through libcurl's write callback (no
// callback may hold bytes of two lines: libcurl hands over one chunk's data
// per callback). A line may still come in several callbacks: libcurl
// passes at most 16 KiB per callback and cuts a chunk where a socket read
// ended, whatever the server's writes (the test logs how often).
func TestStreamOneLinePerChunkForLibcurlAndGo(t *testing.T) {
	certFile, keyFile := writeCertificate(t, t.TempDir())
	inst := harness.Start(t, bin, harness.Dev("--https-enabled", "--https-port=0",
		"--https-certificate-file="+certFile, "--https-private-key-file="+keyFile)...)
	const subject = "/chunks"
	want := writeMixedEvents(t, inst, subject, 3000)

	dial := map[string]func() (net.Conn, error){
		"http": func() (net.Conn, error) { return net.Dial("tcp", strings.TrimPrefix(inst.URL("http"), "http://")) },
		"https": func() (net.Conn, error) {
			return tls.Dial("tcp", strings.TrimPrefix(inst.URL("https"), "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		},
	}
	for _, scheme := range []string{"http", "https"} {
		t.Run("wire/"+scheme, func(t *testing.T) {
			conn, err := dial[scheme]()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			postRaw(conn, "/api/v1/read-events", fmt.Sprintf(`{"subject":%q}`, subject))
			if got := chunkIDs(t, readChunked(t, bufio.NewReader(conn))); !slices.Equal(got, want) {
				t.Fatalf("%d chunks, want the %d events in order", len(got), len(want))
			}
		})
		t.Run("libcurl/"+scheme, func(t *testing.T) {
			r := readWithLibcurl(t, inst.URL(scheme), subject)
			t.Logf("%d callbacks (largest %d bytes): %d lines whole, %d torn (%d of them of at most 16 KiB)",
				r.Callbacks, r.MaxCallback, r.Whole, r.Torn, r.TornSmall)
			if r.Status != 200 || r.Shared != 0 || len(r.Bad) != 0 {
				t.Fatalf("status %d, %d callbacks with bytes of two lines, lines not one event each: %q", r.Status, r.Shared, r.Bad)
			}
			if !slices.Equal(r.IDs, want) || r.Whole <= r.Torn || r.MaxCallback > 16<<10 {
				t.Fatalf("%d lines, want the %d events in order; %d whole, %d torn; largest callback %d bytes", len(r.IDs), len(want), r.Whole, r.Torn, r.MaxCallback)
			}
		})
	}
}
