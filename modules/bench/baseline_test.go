package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestServeBaseline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	served := make(chan error, 1)
	go func() { served <- ServeBaseline(ctx, 0, &out) }()
	var entry struct {
		Message string `json:"message"`
		Port    int    `json:"port"`
	}
	for deadline := time.Now().Add(5 * time.Second); entry.Port == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no port announced; output %q", out.String())
		}
		if line, ok := strings.CutSuffix(out.String(), "\n"); ok {
			if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Message != baselineListening {
				t.Fatalf("announcement %q: %v", line, err)
			}
		}
	}
	target := Target{URL: fmt.Sprintf("http://127.0.0.1:%d", entry.Port), Token: "t"}
	resp, err := target.post(ctx, newClient(1), "/api/v1/write-events", writeBody("/s", EventType, 1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"ok":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	res := target.Write(ctx, "baseline", EventType, 4, 1, 100*time.Millisecond)
	if res.Errors != 0 || res.Requests == 0 {
		t.Fatalf("load: %d requests, %d errors", res.Requests, res.Errors)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("after the end: %v", err)
	}
}
