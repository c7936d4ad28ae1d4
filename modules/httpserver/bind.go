package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// lookupFunc resolves a host name to its IP addresses, like
// (*net.Resolver).LookupNetIP with network "ip".
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// resolve turns configured addresses (IP addresses and host names) into the
// IP addresses to bind: a host name stands for every address it resolves to,
// and each address is bound once, in the order it first appears. None means
// all interfaces and gives none.
func resolve(ctx context.Context, lookup lookupFunc, addresses []string) ([]netip.Addr, error) {
	var out []netip.Addr
	seen := make(map[netip.Addr]bool)
	for _, address := range addresses {
		ips, err := addressIPs(ctx, lookup, address)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			// The resolver gives IPv4 addresses in IPv6 form (::ffff:a.b.c.d).
			ip = ip.Unmap()
			if !seen[ip] {
				seen[ip] = true
				out = append(out, ip)
			}
		}
	}
	return out, nil
}

// addressIPs returns the IP address itself, or the addresses a host name
// resolves to.
func addressIPs(ctx context.Context, lookup lookupFunc, address string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(address); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := lookup(ctx, address)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", address, err)
	}
	return ips, nil
}

// bindAttempts limits how often bind picks a new port when the one the
// kernel picked for the first address is taken on another.
const bindAttempts = 5

// bind opens a TCP socket on port at each of ips, or one on all interfaces
// when ips is empty. Port 0 lets the kernel pick a free port for the first
// address; the other addresses get the same port, so that one port number
// describes the listener. If any address cannot be bound, the sockets opened
// so far are closed and the error names the address.
func bind(ips []netip.Addr, port int) ([]net.Listener, error) {
	for attempt := 1; ; attempt++ {
		sockets, err := bindOnce(ips, port)
		if err == nil || port != 0 || attempt == bindAttempts || !errors.Is(err, syscall.EADDRINUSE) {
			return sockets, err
		}
	}
}

func bindOnce(ips []netip.Addr, port int) ([]net.Listener, error) {
	if len(ips) == 0 {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return nil, err
		}
		return []net.Listener{ln}, nil
	}
	sockets := make([]net.Listener, 0, len(ips))
	for _, ip := range ips {
		// tcp4 and tcp6 bind exactly the address given: 0.0.0.0 is every
		// IPv4 address only, :: every IPv6 address only.
		network := "tcp4"
		if ip.Is6() {
			network = "tcp6"
		}
		ln, err := net.Listen(network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err != nil {
			for _, s := range sockets {
				_ = s.Close()
			}
			return nil, err
		}
		sockets = append(sockets, ln)
		port = ln.Addr().(*net.TCPAddr).Port
	}
	return sockets, nil
}
