// Package harness starts the real eventstore binary for end-to-end tests:
// it builds the binary once per test package, runs it on free loopback-
// reachable ports, checks that every line it writes to stdout is a JSON log
// entry with the documented keys, and speaks HTTP to it.
package harness

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Token is the API token the harness starts instances with (unless a test
// passes its own).
const Token = "e2e-Token-0123456789-abcdefghijklmnopqrstuvwxyz"

// Dev returns the arguments of a development instance on a free port with the
// harness token, followed by extra.
func Dev(extra ...string) []string {
	return append([]string{"run", "--api-token=" + Token, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0"}, extra...)
}

// StartTimeout is how long Start waits for "eventstore is running".
const StartTimeout = 30 * time.Second

// Build compiles cmd/eventstore into dir and returns the binary's path.
func Build(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "eventstore")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/eventstore")
	cmd.Dir = root
	cmd.Env = vcsStamping(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// vcsStamping returns env with GOFLAGS asking for -buildvcs=auto, so that
// a binary built from a git checkout carries its revision (as a plain go
// build does where GOFLAGS does not turn it off).
func vcsStamping(env []string) []string {
	out := make([]string, 0, len(env)+1)
	flags := []string{"-buildvcs=auto"}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			for _, f := range strings.Fields(v) {
				if !strings.HasPrefix(f, "-buildvcs") {
					flags = append(flags, f)
				}
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GOFLAGS="+strings.Join(flags, " "))
}

// Instance is one running eventstore process.
type Instance struct {
	t        testing.TB
	cmd      *exec.Cmd
	stderr   lockedBuffer
	exited   chan struct{}
	exitCode int
	// accessFile: started with an access file instead of --api-token
	// (AccessFileMode).
	accessFile bool

	mu        sync.Mutex
	lines     []string
	entries   []map[string]any
	newLine   chan struct{}
	listeners []string

	// Client sends the instance's requests.
	Client *http.Client
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of exec and
// concurrent readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tempEnv returns the environment of a process the test starts, whose
// temporary files (a --data-directory-temporary, above all) go to a
// directory of the test: a process the test kills cannot remove its own,
// and each run of the tests left gigabytes of them behind.
func tempEnv(t testing.TB) []string {
	return append(os.Environ(), "TMPDIR="+t.TempDir())
}

// Start runs the binary with args and waits until it announces that it is
// running. The process is killed when the test ends, if still running.
func Start(t testing.TB, bin string, args ...string) *Instance {
	t.Helper()
	inst := Launch(t, bin, args...)
	entry := inst.WaitForLog("eventstore is running", StartTimeout)
	for _, l := range entry["listeners"].([]any) {
		inst.listeners = append(inst.listeners, l.(string))
	}
	if inst.accessFile {
		inst.checkAccessFile()
	}
	return inst
}

// Launch runs the binary with args without waiting for it to be running.
func Launch(t testing.TB, bin string, args ...string) *Instance {
	t.Helper()
	inst := &Instance{t: t, exited: make(chan struct{}), newLine: make(chan struct{}), Client: NewClient()}
	args, inst.accessFile = withAccessFile(t, args)
	inst.cmd = exec.Command(bin, args...)
	inst.cmd.Env = tempEnv(t)
	inst.cmd.Stderr = &inst.stderr
	stdout, err := inst.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	readDone := make(chan struct{})
	go inst.read(stdout, readDone)
	go func() {
		<-readDone
		err := inst.cmd.Wait()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exitErr):
			inst.exitCode = exitErr.ExitCode()
		default:
			inst.exitCode = -1
		}
		close(inst.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-inst.exited:
		default:
			_ = inst.cmd.Process.Kill()
			<-inst.exited
		}
		inst.checkLogShape()
	})
	return inst
}

func (inst *Instance) read(stdout io.Reader, done chan<- struct{}) {
	defer close(done)
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for scanner.Scan() {
		line := scanner.Text()
		var entry map[string]any
		_ = json.Unmarshal([]byte(line), &entry)
		inst.mu.Lock()
		inst.lines = append(inst.lines, line)
		inst.entries = append(inst.entries, entry)
		close(inst.newLine)
		inst.newLine = make(chan struct{})
		inst.mu.Unlock()
	}
}

var (
	logTime     = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)
	lowerCamel  = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	logLevels   = map[string]bool{"DEBUG": true, "INFO": true, "WARN": true, "ERROR": true, "FATAL": true}
	fixedFields = map[string]bool{"time": true, "level": true, "message": true, "logger": true, "caller": true, "stacktrace": true}
)

// checkLogShape fails the test for any stdout line that is not a documented
// log entry: a JSON object starting with time and level, with a message, a
// stacktrace only at ERROR and FATAL, and lowerCamelCase fields.
func (inst *Instance) checkLogShape() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	for i, line := range inst.lines {
		e := inst.entries[i]
		problem := ""
		switch {
		case e == nil:
			problem = "not a JSON object"
		case !strings.HasPrefix(line, `{"time":"`):
			problem = "time is not the first key"
		case !logTime.MatchString(fmt.Sprint(e["time"])):
			problem = "time is not RFC 3339 UTC with nanoseconds"
		case !logLevels[fmt.Sprint(e["level"])]:
			problem = "unknown level"
		case e["message"] == nil:
			problem = "no message"
		case e["stacktrace"] != nil && e["level"] != "ERROR" && e["level"] != "FATAL":
			problem = "stacktrace below ERROR"
		}
		for k := range e {
			if !fixedFields[k] && !lowerCamel.MatchString(k) {
				problem = "field " + k + " is not lowerCamelCase"
			}
		}
		if problem != "" {
			inst.t.Errorf("stdout line %d: %s: %s", i+1, problem, line)
		}
	}
}

// URL returns the base URL of the listener with scheme ("http" or "https"),
// reached over 127.0.0.1.
func (inst *Instance) URL(scheme string) string {
	for _, l := range inst.listeners {
		if strings.HasPrefix(l, scheme+"://") {
			return strings.Replace(l, "0.0.0.0", "127.0.0.1", 1)
		}
	}
	inst.t.Fatalf("no %s listener among %v", scheme, inst.listeners)
	return ""
}

// Listeners returns the listener URLs of the running announcement.
func (inst *Instance) Listeners() []string { return inst.listeners }

// NewClient returns an HTTP client for the tests; it trusts any certificate,
// since the tests make their own.
func NewClient() *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true},
	}
}

// Response is a finished HTTP exchange.
type Response struct {
	*http.Response
	Body []byte
}

// Do sends a request to the HTTP listener. token "" sends no Authorization
// header; extra header pairs follow the body.
func (inst *Instance) Do(method, path, token, body string, header ...string) Response {
	inst.t.Helper()
	return inst.DoURL(method, inst.URL("http")+path, token, body, header...)
}

// DoURL sends a request to url.
func (inst *Instance) DoURL(method, url, token, body string, header ...string) Response {
	inst.t.Helper()
	return inst.do(method, url, token, strings.NewReader(body), header...)
}

// DoReader sends a request to the HTTP listener with a body streamed from
// body.
func (inst *Instance) DoReader(method, path, token string, body io.Reader, header ...string) Response {
	inst.t.Helper()
	return inst.do(method, inst.URL("http")+path, token, body, header...)
}

func (inst *Instance) do(method, url, token string, body io.Reader, header ...string) Response {
	inst.t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		inst.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := inst.Client.Do(req)
	if err != nil {
		inst.t.Fatalf("%s %s: %v%s", method, url, err, inst.gone())
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		inst.t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return Response{Response: resp, Body: raw}
}

// gone describes the process once it has exited (waiting a second for
// that): its exit code and the end of its output, for the message of a
// request that failed; "" while it runs.
func (inst *Instance) gone() string {
	select {
	case <-inst.exited:
	case <-time.After(time.Second):
		return ""
	}
	return fmt.Sprintf(" (the process exited with code %d; its stdout ends:\n%s\nits stderr ends:\n%s)",
		inst.exitCode, lastLines(inst.Stdout(), 20), lastLines(inst.Stderr(), 20))
}

// lastLines returns the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Signal sends sig to the process.
func (inst *Instance) Signal(sig syscall.Signal) {
	inst.t.Helper()
	if err := inst.cmd.Process.Signal(sig); err != nil {
		inst.t.Fatalf("signal %s: %v", sig, err)
	}
}

// Wait waits up to timeout for the process to exit and returns its exit code.
func (inst *Instance) Wait(timeout time.Duration) int {
	inst.t.Helper()
	select {
	case <-inst.exited:
		return inst.exitCode
	case <-time.After(timeout):
		inst.t.Fatalf("process still running after %s; stdout:\n%s", timeout, inst.Stdout())
		return -1
	}
}

// Pid returns the process id.
func (inst *Instance) Pid() int { return inst.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (inst *Instance) Exited() bool {
	select {
	case <-inst.exited:
		return true
	default:
		return false
	}
}

// WaitForLog waits for a log entry with message and returns it.
func (inst *Instance) WaitForLog(message string, timeout time.Duration) map[string]any {
	inst.t.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		inst.mu.Lock()
		for ; seen < len(inst.entries); seen++ {
			if e := inst.entries[seen]; e != nil && e["message"] == message {
				inst.mu.Unlock()
				return e
			}
		}
		next := inst.newLine
		inst.mu.Unlock()
		select {
		case <-next:
		case <-inst.exited:
			// the reader has drained stdout once exited is closed
			if inst.hasLog(message) {
				continue
			}
			inst.t.Fatalf("process exited (code %d) before logging %q; stdout:\n%s\nstderr:\n%s", inst.exitCode, message, inst.Stdout(), inst.stderr.String())
		case <-deadline:
			inst.t.Fatalf("no log entry %q within %s; stdout:\n%s", message, timeout, inst.Stdout())
		}
	}
}

func (inst *Instance) hasLog(message string) bool {
	return len(inst.Logs(message)) > 0
}

// Logs returns the log entries with message, or all entries for "".
func (inst *Instance) Logs(message string) []map[string]any {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	var out []map[string]any
	for _, e := range inst.entries {
		if e != nil && (message == "" || e["message"] == message) {
			out = append(out, e)
		}
	}
	return out
}

// Stdout returns everything the process wrote to stdout so far.
func (inst *Instance) Stdout() string {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return strings.Join(inst.lines, "\n")
}

// Stderr returns everything the process wrote to stderr so far.
func (inst *Instance) Stderr() string { return inst.stderr.String() }

// Run runs the binary to completion and returns its exit code, stdout and stderr.
func Run(t testing.TB, bin string, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = tempEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return exitErr.ExitCode(), stdout.String(), stderr.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String(), stderr.String()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		t.Fatalf("%v still running after %s", args, timeout)
		return -1, "", ""
	}
}

// WriteFile writes content to name in dir and returns the path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
