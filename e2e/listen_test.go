package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// devOn returns the arguments of a development instance whose HTTP listener
// binds to address, followed by extra.
func devOn(address string, extra ...string) []string {
	return harness.Dev(append([]string{"--http-address=" + address}, extra...)...)
}

// portOf returns the port of a listener URL such as "http://[::1]:3000".
func portOf(t *testing.T, url string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(url[strings.Index(url, "://")+3:])
	if err != nil {
		t.Fatalf("listener %q: %v", url, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n == 0 {
		t.Fatalf("listener %q has no port", url)
	}
	return n
}

// requireIPv6Loopback skips the test when the machine cannot bind ::1.
func requireIPv6Loopback(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine: %v", err)
	}
	ln.Close()
}

// otherLocalAddresses returns addresses of this machine other than
// 127.0.0.1 that accept connections: ::1 and the first usable address of a
// network interface, each proven reachable with a listener of the test.
func otherLocalAddresses(t *testing.T) []netip.Addr {
	t.Helper()
	candidates := []netip.Addr{netip.IPv6Loopback()}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if prefix, err := netip.ParsePrefix(a.String()); err == nil && !prefix.Addr().IsLoopback() && !prefix.Addr().IsLinkLocalUnicast() {
			candidates = append(candidates, prefix.Addr())
			break
		}
	}
	var out []netip.Addr
	for _, ip := range candidates {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			continue
		}
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		ln.Close()
		if err == nil {
			conn.Close()
			out = append(out, ip)
		}
	}
	return out
}

// requireRefused fails the test unless a connection to ip at port is refused.
func requireRefused(t *testing.T, ip netip.Addr, port int) {
	t.Helper()
	addr := netip.AddrPortFrom(ip, uint16(port)).String()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect to %s: got %v, want connection refused", addr, err)
	}
}

// listeningOn returns the local addresses of the TCP sockets in the LISTEN
// state on port, read from /proc/net/tcp and /proc/net/tcp6; ok is false
// where the machine has no such files.
func listeningOn(t *testing.T, port int) (addrs []netip.Addr, ok bool) {
	t.Helper()
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			return nil, false
		}
		scanner := bufio.NewScanner(f)
		scanner.Scan() // header
		for scanner.Scan() {
			// sl local_address rem_address st ...; an address is the hex of
			// its 32-bit words in host byte order, the port big-endian hex.
			fields := strings.Fields(scanner.Text())
			if len(fields) < 4 || fields[3] != "0A" {
				continue
			}
			hexIP, hexPort, _ := strings.Cut(fields[1], ":")
			p, err1 := strconv.ParseUint(hexPort, 16, 16)
			raw, err2 := hex.DecodeString(hexIP)
			if err1 != nil || err2 != nil || int(p) != port {
				continue
			}
			for i := 0; i+4 <= len(raw); i += 4 {
				binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
			}
			ip, _ := netip.AddrFromSlice(raw)
			addrs = append(addrs, ip)
		}
		f.Close()
	}
	return addrs, true
}

func TestListenLoopbackOnly(t *testing.T) {
	inst := harness.Start(t, bin, devOn("127.0.0.1")...)
	listeners := inst.Listeners()
	if len(listeners) != 1 || !strings.HasPrefix(listeners[0], "http://127.0.0.1:") {
		t.Fatalf("listeners %v, want one on 127.0.0.1", listeners)
	}
	if r := inst.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("ping on 127.0.0.1: %d", r.StatusCode)
	}
	port := portOf(t, listeners[0])

	// Bound to all interfaces, every other address of the machine would
	// answer at the port; bound to 127.0.0.1, they refuse.
	others := otherLocalAddresses(t)
	for _, ip := range others {
		requireRefused(t, ip, port)
	}
	bound, ok := listeningOn(t, port)
	if ok && !slices.Equal(bound, []netip.Addr{netip.MustParseAddr("127.0.0.1")}) {
		t.Fatalf("sockets listening on port %d: %v, want 127.0.0.1 only", port, bound)
	}
	if len(others) == 0 && !ok {
		t.Skip("neither another local address nor /proc/net/tcp: only the start log was checked")
	}
}

func TestListenIPv6Loopback(t *testing.T) {
	requireIPv6Loopback(t)
	for _, address := range []string{"::1", "[::1]"} {
		t.Run(address, func(t *testing.T) {
			inst := harness.Start(t, bin, devOn(address)...)
			listeners := inst.Listeners()
			if len(listeners) != 1 || !strings.HasPrefix(listeners[0], "http://[::1]:") {
				t.Fatalf("listeners %v, want one on [::1]", listeners)
			}
			if r := inst.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
				t.Fatalf("ping on [::1]: %d", r.StatusCode)
			}
			requireRefused(t, netip.MustParseAddr("127.0.0.1"), portOf(t, listeners[0]))
		})
	}
}

func TestListenTwoAddresses(t *testing.T) {
	requireIPv6Loopback(t)
	inst := harness.Start(t, bin, devOn("127.0.0.1,[::1]")...)
	listeners := inst.Listeners()
	if len(listeners) != 2 {
		t.Fatalf("listeners %v, want 127.0.0.1 and [::1]", listeners)
	}
	port := portOf(t, listeners[0])
	if want := []string{fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://[::1]:%d", port)}; !slices.Equal(listeners, want) {
		t.Fatalf("listeners %v, want %v (one port picked for both)", listeners, want)
	}
	for _, url := range listeners {
		if r := inst.DoURL("GET", url+"/api/v1/ping", "", ""); r.StatusCode != 200 {
			t.Fatalf("ping on %s: %d", url, r.StatusCode)
		}
	}
	if bound, ok := listeningOn(t, port); ok && len(bound) != 2 {
		t.Fatalf("sockets listening on port %d: %v, want 127.0.0.1 and ::1", port, bound)
	}
}

func TestListenHostName(t *testing.T) {
	// localhost resolves to 127.0.0.1 (and ::1 where the machine says so);
	// an address reached twice is bound once.
	inst := harness.Start(t, bin, devOn("localhost,127.0.0.1")...)
	listeners := inst.Listeners()
	port := portOf(t, listeners[0])
	loopback := fmt.Sprintf("http://127.0.0.1:%d", port)
	if !slices.Contains(listeners, loopback) || len(listeners) > 2 {
		t.Fatalf("listeners %v, want %s once, and at most [::1] besides", listeners, loopback)
	}
	for _, url := range listeners {
		if url != loopback && url != fmt.Sprintf("http://[::1]:%d", port) {
			t.Fatalf("listeners %v: %s is not a loopback address", listeners, url)
		}
		if r := inst.DoURL("GET", url+"/api/v1/ping", "", ""); r.StatusCode != 200 {
			t.Fatalf("ping on %s: %d", url, r.StatusCode)
		}
	}
}

func TestListenHTTPSAddressFromEnvironment(t *testing.T) {
	certFile, keyFile := writeCertificate(t, t.TempDir())
	t.Setenv("EVENTSTORE_HTTPS_ADDRESS", "127.0.0.1")
	t.Setenv("EVENTSTORE_HTTP_ADDRESS", "192.0.2.1") // the command line wins
	inst := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory-temporary",
		"--http-enabled", "--http-port=0", "--http-address=127.0.0.1", "--https-port=0",
		"--https-certificate-file="+certFile, "--https-private-key-file="+keyFile)
	listeners := inst.Listeners()
	if len(listeners) != 2 || !strings.HasPrefix(listeners[0], "http://127.0.0.1:") || !strings.HasPrefix(listeners[1], "https://127.0.0.1:") {
		t.Fatalf("listeners %v, want http and https on 127.0.0.1", listeners)
	}
	if r := inst.DoURL("GET", listeners[1]+"/api/v1/ping", "", ""); r.StatusCode != 200 || r.TLS == nil {
		t.Fatalf("ping over HTTPS on 127.0.0.1: %d", r.StatusCode)
	}
	for _, ip := range otherLocalAddresses(t) {
		requireRefused(t, ip, portOf(t, listeners[1]))
	}
}

func TestListenUsageErrors(t *testing.T) {
	cases := []usageCase{
		{"empty element", devOn("127.0.0.1,"), nil, `--http-address has an empty element in "127.0.0.1,"`},
		{"port inside", devOn("127.0.0.1:80"), nil, `--http-address: "127.0.0.1:80" contains a port; give the port with --http-port`},
		{"IPv6 with port", devOn("[::1]:3000"), nil, `"[::1]:3000" contains a port`},
		{"garbage", devOn("not an address"), nil, `--http-address: "not an address" is not an IP address or host name`},
		{"URL", devOn("http://127.0.0.1"), nil, "is not an IP address or host name"},
		{"from the environment", harness.Dev(), []string{"EVENTSTORE_HTTPS_ADDRESS=::1,,127.0.0.1"}, "--https-address has an empty element"},
	}
	expectUsageErrors(t, cases)
}

func TestListenUnbindableAddress(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) is documentation only, an address of no machine.
	if ln, err := net.Listen("tcp4", "192.0.2.1:0"); err == nil {
		ln.Close()
		t.Skip("192.0.2.1 is an address of this machine")
	}
	inst := harness.Launch(t, bin, devOn("127.0.0.1,192.0.2.1")...)
	if code := inst.Wait(30 * time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	failed := inst.Logs("startup failed")
	if len(failed) != 1 || failed[0]["level"] != "ERROR" || !strings.Contains(fmt.Sprint(failed[0]["error"]), "192.0.2.1:") {
		t.Fatalf("startup failed entries %v, want one naming 192.0.2.1\n%s", failed, inst.Stdout())
	}
	if len(inst.Logs("eventstore is running")) != 0 {
		t.Fatal("announced running although an address could not be bound")
	}
}

func TestListenHelp(t *testing.T) {
	_, stdout, _ := harness.Run(t, bin, 10*time.Second, "run", "--help")
	for _, want := range []string{"--http-address value", "$EVENTSTORE_HTTP_ADDRESS", "--https-address value", "$EVENTSTORE_HTTPS_ADDRESS"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --help does not mention %s", want)
		}
	}
}
