package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
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
	lookup    lookupFunc
	limit     *connLimit // of the connections of all listeners; nil: none
	listeners []*listener
}

// listener is one configured listener (HTTP or HTTPS): one server on a socket
// at each of its addresses, all with the same port.
type listener struct {
	scheme  string
	srv     *http.Server
	sockets []net.Listener
	// urls name the sockets, e.g. "http://127.0.0.1:3000".
	urls []string
	done sync.WaitGroup
}

// New returns a Server for the listeners enabled in cfg, with
// cfg.MaxConnections connections on all of them together (0: no limit) and
// config.ConnectionReserve more for ping and health; m counts what the
// limit does.
func New(cfg config.Config, log *zap.Logger, handler http.Handler, version string, m ConnMetrics) *Server {
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	s := &Server{cfg: cfg, log: log, handler: handler, lookup: lookup}
	if cfg.MaxConnections > 0 {
		s.limit = newConnLimit(cfg.MaxConnections, config.ConnectionReserve, ServerHeader(version), m)
	}
	return s
}

// Start opens the enabled listeners and serves on them. If an address cannot
// be resolved or bound, the listeners opened so far are closed again and the
// error names the address.
func (s *Server) Start(ctx context.Context) error {
	if s.cfg.HTTP.Enabled {
		if err := s.listen(ctx, "http", s.cfg.HTTP, nil); err != nil {
			return err
		}
		s.log.Warn("plain HTTP enabled", zap.Int("port", s.listeners[len(s.listeners)-1].port()))
	}
	if s.cfg.HTTPS.Enabled {
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*s.cfg.Certificate}}
		if err := s.listen(ctx, "https", s.cfg.HTTPS, tlsConfig); err != nil {
			_ = s.Stop(context.Background())
			return err
		}
	}
	return nil
}

func (s *Server) listen(ctx context.Context, scheme string, cfg config.Listener, tlsConfig *tls.Config) error {
	ips, err := resolve(ctx, s.lookup, cfg.Addresses)
	if err != nil {
		return fmt.Errorf("open %s listener: %w", scheme, err)
	}
	sockets, err := bind(ips, cfg.Port)
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
		for _, ln := range sockets {
			_ = ln.Close()
		}
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
		ConnContext:       connContext,
		// OPTIONS * goes through the handler too, which gives it the
		// headers of every response (and a 404).
		DisableGeneralOptionsHandler: true,
	}
	if s.limit != nil {
		srv.ConnState = s.limit.track
	}
	l := &listener{scheme: scheme, srv: srv, sockets: sockets}
	for _, ln := range sockets {
		l.urls = append(l.urls, socketURL(scheme, ln, len(ips) == 0))
	}
	s.listeners = append(s.listeners, l)
	for i, ln := range sockets {
		ln := newBatchListener(ln, s.limit, tlsConfig == nil)
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			var err error
			if tlsConfig != nil {
				err = srv.ServeTLS(ln, "", "")
			} else {
				err = srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("listener failed", zap.String("listener", l.urls[i]), zap.Error(err))
			}
		}()
	}
	return nil
}

// socketURL names a bound socket, e.g. "http://[::1]:3000"; a socket on all
// interfaces is named by 0.0.0.0.
func socketURL(scheme string, ln net.Listener, allInterfaces bool) string {
	addr := ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if allInterfaces {
		host = "0.0.0.0"
	}
	if addr.Zone != "" {
		host += "%" + addr.Zone
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// Stop closes the listeners and waits for the requests in flight; those
// still running when the share of ctx's time left that the HTTP server may
// use is over lose their connections (a client that neither sends nor reads
// holds no shutdown up), and the rest of the time is left to the stops that
// follow (the store's).
func (s *Server) Stop(ctx context.Context) error {
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-stopReserve(time.Until(deadline))))
		defer cancel()
	}
	var wg sync.WaitGroup
	for _, l := range s.listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.srv.Shutdown(ctx); err != nil {
				s.log.Warn("closing the connections still open at shutdown", zap.String("listener", l.scheme), zap.Error(err))
				_ = l.srv.Close()
			}
			l.done.Wait()
		}()
	}
	wg.Wait()
	s.listeners = nil
	return nil
}

// stopReserve is the part of the stop phase's time left the HTTP server
// leaves to the stops after it: a quarter, at least a second (if there is
// one), at most five.
func stopReserve(left time.Duration) time.Duration {
	return min(max(left/4, min(time.Second, left/2)), 5*time.Second)
}

// Listeners returns the URLs of the open sockets, e.g. "http://0.0.0.0:3000"
// for all interfaces or "http://127.0.0.1:3000" and "http://[::1]:3000".
func (s *Server) Listeners() []string {
	urls := []string{}
	for _, l := range s.listeners {
		urls = append(urls, l.urls...)
	}
	return urls
}

// port is the port all sockets of the listener share.
func (l *listener) port() int {
	return l.sockets[0].Addr().(*net.TCPAddr).Port
}
