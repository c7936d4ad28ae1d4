package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/eventstore-service/eventstore/modules/config"
)

// Server limits; ReadTimeout and WriteTimeout stay 0 so long streams live,
// requests get per-request deadlines instead (see limits).
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// Server runs the HTTP and HTTPS listeners.
type Server struct {
	cfg       config.Config
	log       *zap.Logger
	handler   http.Handler
	listeners []*listener
}

type listener struct {
	scheme string
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}
}

// New returns a Server for the listeners enabled in cfg.
func New(cfg config.Config, log *zap.Logger, handler http.Handler) *Server {
	return &Server{cfg: cfg, log: log, handler: handler}
}

// Start opens the enabled listeners and serves on them. If one cannot be
// opened, the others are closed again and the error names the address.
func (s *Server) Start(context.Context) error {
	if s.cfg.HTTP.Enabled {
		if err := s.listen("http", s.cfg.HTTP.Port, nil); err != nil {
			return err
		}
		s.log.Warn("plain HTTP enabled", zap.Int("port", s.listeners[len(s.listeners)-1].port()))
	}
	if s.cfg.HTTPS.Enabled {
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*s.cfg.Certificate}}
		if err := s.listen("https", s.cfg.HTTPS.Port, tlsConfig); err != nil {
			_ = s.Stop(context.Background())
			return err
		}
	}
	return nil
}

func (s *Server) listen(scheme string, port int, tlsConfig *tls.Config) error {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("open %s listener: %w", scheme, err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if tlsConfig == nil {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP2(true)
	}
	// The Go server reports connection-level problems (TLS handshakes,
	// malformed requests) here: diagnostics, hence DEBUG.
	stdLog, err := zap.NewStdLogAt(s.log, zapcore.DebugLevel)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		TLSConfig:         tlsConfig,
		Protocols:         protocols,
		ErrorLog:          stdLog,
	}
	l := &listener{scheme: scheme, srv: srv, ln: ln, done: make(chan struct{})}
	s.listeners = append(s.listeners, l)
	go func() {
		defer close(l.done)
		var err error
		if tlsConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("listener failed", zap.String("listener", l.address()), zap.Error(err))
		}
	}()
	return nil
}

// Stop closes the listeners and waits for in-flight requests until ctx ends;
// then it closes the remaining connections.
func (s *Server) Stop(ctx context.Context) error {
	var errs []error
	for _, l := range s.listeners {
		if err := l.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down %s listener: %w", l.scheme, err))
			_ = l.srv.Close()
		}
		<-l.done
	}
	s.listeners = nil
	return errors.Join(errs...)
}

// Listeners returns the URLs of the open listeners, e.g. "http://0.0.0.0:3000".
func (s *Server) Listeners() []string {
	urls := make([]string, 0, len(s.listeners))
	for _, l := range s.listeners {
		urls = append(urls, l.address())
	}
	return urls
}

func (l *listener) port() int {
	if addr, ok := l.ln.Addr().(*net.TCPAddr); ok {
		return addr.Port
	}
	return 0
}

func (l *listener) address() string {
	return l.scheme + "://0.0.0.0:" + strconv.Itoa(l.port())
}
