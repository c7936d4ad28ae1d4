package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// OTLPSinkSubcommand is the hidden subcommand of `eventstore bench` that
// runs ServeOTLPSink.
const OTLPSinkSubcommand = "otlp-sink"

// ServeOTLPSink is a collector for measuring the cost of tracing: on
// 127.0.0.1:port it takes OTLP trace exports over HTTP (POST /v1/traces,
// protobuf), throws them away at once and answers success, until ctx
// ends. It prints {"message":"otlp sink listening","port":<port>} once it
// listens, and the exports and bytes it took when it ends.
func ServeOTLPSink(ctx context.Context, port int, out io.Writer) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("otlp sink: %w", err)
	}
	var exports, bytes atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
				http.NotFound(w, r)
				return
			}
			n, _ := io.Copy(io.Discard, r.Body)
			exports.Add(1)
			bytes.Add(n)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse: every span taken
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	if err := serveUntil(ctx, srv, ln, out, "otlp sink listening"); err != nil {
		return fmt.Errorf("otlp sink: %w", err)
	}
	fmt.Fprintf(out, "{\"message\":\"otlp sink stopped\",\"exports\":%d,\"bytes\":%d}\n", exports.Load(), bytes.Load())
	return nil
}
