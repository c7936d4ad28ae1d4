package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/httpserver"
)

// BaselineSubcommand is the hidden subcommand of `eventstore bench` that
// runs ServeBaseline; StartBaseline runs it with --port=0.
const BaselineSubcommand = "baseline-server"

// baselineListening is the message ServeBaseline prints once it listens.
const baselineListening = "baseline listening"

// ServeBaseline serves the baseline on 127.0.0.1:port (0: a free port)
// until ctx ends: a trivial handler that reads the request and answers 200
// with a tiny JSON body, behind an http.Server configured as eventstore's
// own listener. Once it listens it prints {"message":"baseline
// listening","port":<port>} to out.
func ServeBaseline(ctx context.Context, port int, out io.Writer) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true}`)
		}),
		ReadHeaderTimeout: httpserver.ReadHeaderTimeout,
		IdleTimeout:       httpserver.IdleTimeout,
		MaxHeaderBytes:    httpserver.MaxHeaderBytes,
		Protocols:         protocols,
	}
	if err := serveUntil(ctx, srv, ln, out, baselineListening); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	return nil
}

// serveUntil serves srv on ln until ctx ends, then shuts it down within
// 5 s; once it serves, it prints {"message":<listening>,"port":<port>}
// to out.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, out io.Writer, listening string) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "{\"message\":%q,\"port\":%d}\n", listening, ln.Addr().(*net.TCPAddr).Port)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// StartBaseline runs the baseline server of binary on a free port; its
// Target carries token so that requests to it have the shape of those to
// eventstore.
func StartBaseline(binary, token string) (*Server, error) {
	s, err := start(binary, []string{"bench", BaselineSubcommand, "--port=0"}, baselineListening, token)
	if err != nil {
		return nil, fmt.Errorf("start the baseline: %w", err)
	}
	return s, nil
}
