package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"
)

func TestServeBaseline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	announced, out := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- ServeBaseline(ctx, 0, out) }()
	line, err := bufio.NewReader(announced).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var entry struct {
		Message string `json:"message"`
		Port    int    `json:"port"`
	}
	if err := json.Unmarshal(line, &entry); err != nil || entry.Message != baselineListening || entry.Port == 0 {
		t.Fatalf("announcement %q: %v", line, err)
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
