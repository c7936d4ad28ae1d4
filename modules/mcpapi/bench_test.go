package mcpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// post sends one JSON-RPC message of a session to url and returns the
// session's id.
func post(b *testing.B, client *http.Client, url, session, message string) string {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(message))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		b.Fatalf("%s: %d", message, resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// BenchmarkOpenSession opens sessions and keeps them: B/session is the
// heap and goroutine stacks an open session holds, goroutines/session its
// goroutines.
func BenchmarkOpenSession(b *testing.B) {
	s := New(Options{MaxResults: 1000})
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	defer srv.Close()
	client := srv.Client()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		session := post(b, client, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		post(b, client, srv.URL, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
	b.ReportMetric(float64(held)/float64(b.N), "B/session")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(b.N), "goroutines/session")
}

// BenchmarkReadEventsTool calls esdb_read_events over a route that streams
// n events of 200 bytes, in a session: the cost a tool call adds to its
// route's (the route here costs next to nothing).
func BenchmarkReadEventsTool(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			var stream strings.Builder
			for i := range n {
				fmt.Fprintf(&stream, `{"type":"event","payload":{"id":"%d","subject":"/books/%d","type":"io.example.book-borrowed","data":{"reader":"%s"}}}`+"\n", i, i, strings.Repeat("r", 120))
			}
			s := New(Options{MaxResults: 1000})
			s.SetRoutes(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				_, _ = io.WriteString(w, stream.String())
			}))
			srv := httptest.NewServer(http.HandlerFunc(s.serve))
			defer srv.Close()
			client := srv.Client()
			session := post(b, client, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			post(b, client, srv.URL, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				post(b, client, srv.URL, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"esdb_read_events","arguments":{"subject":"/","options":{"recursive":true}}}}`)
			}
		})
	}
}
