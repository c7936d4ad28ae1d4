package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// rawClient is a connection that writes its requests by hand, as slow and
// careless clients do.
type rawClient struct {
	net.Conn
	r *bufio.Reader
}

// dialRaw opens a connection to the plain HTTP listener of inst, closed
// when the test ends.
func dialRaw(t *testing.T, inst *harness.Instance) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(inst.URL("http"), "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawClient{Conn: c, r: bufio.NewReader(c)}
}

func (c *rawClient) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// answer reads the next response within wait.
func (c *rawClient) answer(t *testing.T, wait time.Duration) (*http.Response, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", wait, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// closed checks that the service closes the connection within wait.
func (c *rawClient) closed(t *testing.T, wait time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	if _, err := io.Copy(io.Discard, c.r); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the connection is still open after %v", wait)
		}
	}
}

// announced is a request that announces a body of n bytes and sends none.
func announced(path, token string, n int) string {
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: eventstore\r\n%sContent-Length: %d\r\n\r\n", path, auth, n)
}

// TestUnauthenticatedBodyNotAwaited: a request without the token that
// announces a body and never sends it is answered 401 at once and its
// connection closed, over HTTP/1.1 as over h2c.
func TestUnauthenticatedBodyNotAwaited(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	c := dialRaw(t, inst)
	start := time.Now()
	c.send(t, announced("/api/v1/write-events", "", 1000))
	resp, body := c.answer(t, 2*time.Second)
	if resp.StatusCode != 401 || body != "unauthorized\n" || !resp.Close || resp.Header.Get("Server") == "" {
		t.Fatalf("HTTP/1.1: %d %q close %v %v", resp.StatusCode, body, resp.Close, resp.Header)
	}
	c.closed(t, 2*time.Second)

	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: protocols}}
	never, _ := io.Pipe()
	defer never.Close()
	req, _ := http.NewRequest("POST", inst.URL("http")+"/api/v1/write-events", never)
	req.ContentLength = 1000
	r, err := h2c.Do(req)
	if err != nil || r.StatusCode != 401 || r.ProtoMajor != 2 {
		t.Fatalf("h2c: %v %v", r, err)
	}
	r.Body.Close()
	t.Logf("answered within %v", time.Since(start))
}

// TestStalledBodies: a body that stalls is answered 408 after the idle
// limit, one that trickles after the total limit; a restore's body may take
// longer than the total limit but not stall.
func TestStalledBodies(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--request-body-idle-timeout=1s", "--request-body-timeout=3s")...)
	stalled := dialRaw(t, inst)
	stalled.send(t, announced("/api/v1/write-events", harness.Token, 1000)+`{"events":[`)
	resp, body := stalled.answer(t, 10*time.Second)
	if resp.StatusCode != 408 || body != "request timeout: the request body stalled\n" {
		t.Fatalf("a stalled body: %d %q", resp.StatusCode, body)
	}
	stalled.closed(t, 2*time.Second)

	trickling := dialRaw(t, inst)
	trickling.send(t, announced("/api/v1/write-events", harness.Token, 1000))
	go func() {
		for i := 0; i < 100; i++ {
			time.Sleep(300 * time.Millisecond)
			if _, err := trickling.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	resp, body = trickling.answer(t, 10*time.Second)
	if resp.StatusCode != 408 || body != "request timeout: the request body took too long\n" {
		t.Fatalf("a trickling body: %d %q", resp.StatusCode, body)
	}
	if r := inst.Do("POST", "/api/v1/read-events", harness.Token, `{"subject":"/","options":{"recursive":true}}`); r.StatusCode != 200 || len(r.Body) != 0 {
		t.Fatalf("something was written: %d %q", r.StatusCode, r.Body)
	}
}

// TestStalledClientsHoldNoShutdown: SIGTERM with clients stalled in every
// phase of a request (headers, an authenticated body, a restore's body, a
// stream nobody reads) ends with exit 0 within the shutdown timeout. (A stop
// that does time out, exit 1, is the lifecycle package's test.)
func TestStalledClientsHoldNoShutdown(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--shutdown-timeout=5s")...)
	// 8 MB of events, more than the socket buffers of a stream hold.
	large := fmt.Sprintf(`{"source":"https://library.example.com","subject":"/books","type":"io.example.book-added","data":{"text":%q}}`, strings.Repeat("x", 32<<10))
	for i := 0; i < 32; i++ {
		mustWrite(t, inst, `{"events":[`+strings.Repeat(large+",", 7)+large+`]}`)
	}
	headers := dialRaw(t, inst)
	headers.send(t, "GET /api/v1/ping HTTP/1.1\r\nHost: eventstore\r\n")
	body := dialRaw(t, inst)
	body.send(t, announced("/api/v1/write-events", harness.Token, 1000)+`{"events":`)
	restore := dialRaw(t, inst)
	restore.send(t, announced("/api/v1/restore", harness.Token, 1<<20))
	unread := dialRaw(t, inst)
	unread.send(t, announced("/api/v1/observe-events", harness.Token, len(`{"subject":"/","options":{"recursive":true}}`))+`{"subject":"/","options":{"recursive":true}}`)
	if err := unread.Conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)

	start := time.Now()
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d with stalled clients, want 0\n%s", code, inst.Stdout())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the shutdown took %v, longer than its timeout", took)
	}
	if len(inst.Logs("stopped")) != 1 || len(inst.Logs("shutdown timed out")) != 0 {
		t.Fatalf("no clean stop:\n%s", inst.Stdout())
	}
}

// TestStalledUnauthenticatedConnections: against a process with 1,024 file
// descriptors, 2,000 clients without a token announce bodies and never send
// them, and 1,000 more never finish their headers, all at once and holding
// their connections: the first are answered at once (401, or 503 too many
// connections while the limit is reached) and closed, the others fill
// places until newcomers take them (after EvictAfter) or the header timeout
// ends them; ping (a fresh connection each time, as probes do) and writes
// keep answering throughout.
func TestStalledUnauthenticatedConnections(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 4000 {
		t.Skipf("the test process needs 4,000 file descriptors for its clients, has %d (%v)", rl.Cur, err)
	}
	inst := harness.Start(t, "prlimit", append([]string{"--nofile=1024:1024", "--", bin}, harness.Dev()...)...)
	running := inst.Logs("eventstore is running")[0]
	if running["openFileLimit"] != 1024.0 {
		t.Fatalf("open-file limit %v, want 1024", running["openFileLimit"])
	}
	addr := strings.TrimPrefix(inst.URL("http"), "http://")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		attackers       sync.WaitGroup
		denied, tooMany atomic.Int64 // answers to the requests announcing bodies
	)
	// hold sends request on a new connection and keeps it until the
	// service closes it (or the test ends), counting the answer if count.
	hold := func(request string, count bool) {
		defer attackers.Done()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		context.AfterFunc(ctx, func() { _ = c.Close() })
		_, _ = io.WriteString(c, request)
		r := bufio.NewReader(c)
		if resp, err := http.ReadResponse(r, nil); err == nil && count {
			switch resp.StatusCode {
			case 401:
				denied.Add(1)
			case 503:
				tooMany.Add(1)
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}
	for i := 0; i < 2000; i++ {
		attackers.Add(1)
		go hold(announced("/api/v1/write-events", "", 1000), true)
		if i%2 == 0 {
			attackers.Add(1)
			go hold("POST /api/v1/write-events HTTP/1.1\r\nHost: eventstore\r\n", false)
		}
	}
	time.Sleep(time.Second + 500*time.Millisecond)
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	writer := harness.NewClient()
	var pings, writes int
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := probe.Get(inst.URL("http") + "/api/v1/ping")
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("ping during the attack: %v %v", resp, err)
		} else {
			resp.Body.Close()
			pings++
		}
		req, _ := http.NewRequest("POST", inst.URL("http")+"/api/v1/write-events", strings.NewReader(candidates("/attacked", "io.example.x")))
		req.Header.Set("Authorization", "Bearer "+harness.Token)
		resp, err = writer.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("a write during the attack: %v %v", resp, err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		writes++
	}
	m := metrics(t, inst)
	stop()
	attackers.Wait()
	t.Logf("of 2,000 unauthenticated requests %d answered 401, %d 503 (too many connections); %d pings, %d writes; evicted %v, refused %v",
		denied.Load(), tooMany.Load(), pings, writes, m["eventstore_http_connections_evicted_total"], m["eventstore_http_connections_refused_total"])
	if denied.Load()+tooMany.Load() != 2000 || denied.Load() == 0 {
		t.Fatalf("%d answered 401 and %d 503 of 2,000 unauthenticated requests", denied.Load(), tooMany.Load())
	}
	if got := len(stream(t, inst, "/api/v1/read-events", `{"subject":"/attacked"}`)); got != writes {
		t.Fatalf("%d events stored, %d writes acknowledged", got, writes)
	}
}

// TestConnectionLimit: with --max-connections reached by running streams,
// a new connection lands in the reserve, where ping and health answer and
// everything else 503 `too many connections`.
func TestConnectionLimit(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--max-connections=4")...)
	if running := inst.Logs("eventstore is running")[0]; running["maxConnections"] != 4.0 {
		t.Fatalf("maxConnections %v in the start log", running["maxConnections"])
	}
	for i := 0; i < 4; i++ {
		o := observe(t, inst, `{"subject":"/","options":{"recursive":true}}`)
		t.Cleanup(o.cancel)
	}
	reserve := harness.NewClient()
	reserve.Transport.(*http.Transport).DisableKeepAlives = true
	inst.Client = reserve
	for _, path := range []string{"/api/v1/ping", "/api/v1/health"} {
		if r := inst.Do("GET", path, harness.Token, ""); r.StatusCode != 200 {
			t.Fatalf("%s at the limit: %d %s", path, r.StatusCode, r.Body)
		}
	}
	r := inst.Do("POST", "/api/v1/write-events", harness.Token, candidates("/a", "io.example.x"))
	if r.StatusCode != 503 || string(r.Body) != "service unavailable: too many connections\n" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("a write at the limit: %d %q", r.StatusCode, r.Body)
	}
	checkCommonHeaders(t, r)
}

// TestOddPaths: OPTIONS * carries the headers of every response; a
// spelling of ping other than /api/v1/ping needs the token.
func TestOddPaths(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev()...)
	c := dialRaw(t, inst)
	c.send(t, "OPTIONS * HTTP/1.1\r\nHost: eventstore\r\n\r\n")
	resp, _ := c.answer(t, 2*time.Second)
	if !strings.HasPrefix(resp.Header.Get("Server"), "EventSourcingDB/1 eventstore/") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("OPTIONS *: %d %v", resp.StatusCode, resp.Header)
	}
	for _, path := range []string{"/api/v1/ping/", "//api/v1/ping", "/api/v1/ping/x"} {
		checkError(t, inst.Do("GET", path, "", ""), 401, "unauthorized")
		checkError(t, inst.Do("GET", path, harness.Token, ""), 404, "not found: unknown route")
	}
}
