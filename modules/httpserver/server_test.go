package httpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
)

// ipv6Loopback skips the test when the machine cannot bind ::1.
func ipv6Loopback(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
}

func TestResolve(t *testing.T) {
	hosts := map[string][]netip.Addr{
		// The resolver gives IPv4 addresses in IPv6 form.
		"localhost": {netip.MustParseAddr("::ffff:127.0.0.1"), netip.MustParseAddr("::1")},
		"db":        {netip.MustParseAddr("10.0.0.5")},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if ips, ok := hosts[host]; ok {
			return ips, nil
		}
		return nil, errors.New("lookup " + host + ": no such host")
	}
	cases := []struct {
		addresses []string
		want      []string
	}{
		{nil, nil},
		{[]string{"127.0.0.1"}, []string{"127.0.0.1"}},
		{[]string{"::ffff:192.0.2.1"}, []string{"192.0.2.1"}},
		{[]string{"localhost"}, []string{"127.0.0.1", "::1"}},
		{[]string{"::1", "localhost", "127.0.0.1", "db", "::1"}, []string{"::1", "127.0.0.1", "10.0.0.5"}},
		{[]string{"fe80::1%eth0", "fe80::1"}, []string{"fe80::1%eth0", "fe80::1"}},
	}
	for _, tc := range cases {
		ips, err := resolve(context.Background(), lookup, tc.addresses)
		var got []string
		for _, ip := range ips {
			got = append(got, ip.String())
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("resolve(%q) = %q, %v; want %q", tc.addresses, got, err, tc.want)
		}
	}
	if _, err := resolve(context.Background(), lookup, []string{"127.0.0.1", "nowhere"}); err == nil || !strings.Contains(err.Error(), "resolve nowhere: ") {
		t.Errorf("unknown host: got %v", err)
	}
}

func TestBindSharesThePickedPort(t *testing.T) {
	ipv6Loopback(t)
	sockets, err := bind([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range sockets {
			s.Close()
		}
	}()
	if len(sockets) != 2 {
		t.Fatalf("%d sockets, want 2", len(sockets))
	}
	first, second := sockets[0].Addr().(*net.TCPAddr), sockets[1].Addr().(*net.TCPAddr)
	if first.Port == 0 || first.Port != second.Port || !first.IP.Equal(net.IPv4(127, 0, 0, 1)) || !second.IP.Equal(net.IPv6loopback) {
		t.Fatalf("bound %s and %s, want 127.0.0.1 and [::1] on one port", first, second)
	}
}

func TestBindFailureClosesTheOthers(t *testing.T) {
	ipv6Loopback(t)
	taken, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port

	_, err = bind([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port)
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "[::1]:"+strconv.Itoa(port)) {
		t.Fatalf("bind to a taken [::1]:%d: got %v, want address already in use naming it", port, err)
	}
	// 127.0.0.1 was bound first; the failure released it again.
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("127.0.0.1:%d still held after the failed bind: %v", port, err)
	}
	ln.Close()
}

// start runs a Server answering "pong" with the given HTTP listener.
func start(t *testing.T, listener config.Listener) (*Server, error) {
	t.Helper()
	listener.Enabled = true
	pong := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "pong") })
	s := New(config.Config{HTTP: listener}, zap.NewNop(), pong, "test", nil)
	if err := s.Start(context.Background()); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s, nil
}

func get(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func TestServerListensOnEveryAddress(t *testing.T) {
	ipv6Loopback(t)
	s, err := start(t, config.Listener{Port: 0, Addresses: []string{"127.0.0.1", "::1", "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	urls := s.Listeners()
	if len(urls) != 2 {
		t.Fatalf("listeners %v, want 127.0.0.1 and [::1] once each", urls)
	}
	port := strings.TrimPrefix(urls[0], "http://127.0.0.1:")
	if want := []string{"http://127.0.0.1:" + port, "http://[::1]:" + port}; !reflect.DeepEqual(urls, want) || port == "0" {
		t.Fatalf("listeners %v, want %v", urls, want)
	}
	for _, url := range urls {
		if body := get(t, url+"/"); body != "pong" {
			t.Fatalf("GET %s: %q", url, body)
		}
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, url := range urls {
		if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
			conn.Close()
			t.Fatalf("%s still accepts connections after Stop", url)
		}
	}
}

func TestServerDefaultIsAllInterfaces(t *testing.T) {
	s, err := start(t, config.Listener{Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	urls := s.Listeners()
	if len(urls) != 1 || !strings.HasPrefix(urls[0], "http://0.0.0.0:") {
		t.Fatalf("listeners %v, want one on 0.0.0.0", urls)
	}
	if body := get(t, strings.Replace(urls[0], "0.0.0.0", "127.0.0.1", 1)+"/"); body != "pong" {
		t.Fatalf("GET over 127.0.0.1: %q", body)
	}
}

func TestServerBindOnlyTheGivenAddress(t *testing.T) {
	s, err := start(t, config.Listener{Port: 0, Addresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	urls := s.Listeners()
	if len(urls) != 1 || !strings.HasPrefix(urls[0], "http://127.0.0.1:") {
		t.Fatalf("listeners %v, want one on 127.0.0.1", urls)
	}
	if body := get(t, urls[0]+"/"); body != "pong" {
		t.Fatalf("GET %s: %q", urls[0], body)
	}
	// On all interfaces, [::1] at the port would answer as well.
	ipv6Loopback(t)
	other := "[::1]:" + strings.TrimPrefix(urls[0], "http://127.0.0.1:")
	if conn, err := net.DialTimeout("tcp", other, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		if err == nil {
			conn.Close()
		}
		t.Fatalf("dial %s: got %v, want connection refused", other, err)
	}
}

func TestServerStartFailureNamesTheAddress(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) is an address of no machine.
	_, err := start(t, config.Listener{Port: 0, Addresses: []string{"127.0.0.1", "192.0.2.1"}})
	if err == nil || !strings.Contains(err.Error(), "open http listener: ") || !strings.Contains(err.Error(), "192.0.2.1:") {
		t.Fatalf("got %v, want an error naming 192.0.2.1", err)
	}
}
