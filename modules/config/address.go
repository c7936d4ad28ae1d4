package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// parseAddresses parses the value of a listen address flag: comma-separated
// IP addresses (IPv6 with or without brackets) or host names, spaces around
// the commas allowed. It returns them without brackets, IP addresses in their
// canonical form. An empty value gives none: the listener binds to all
// interfaces. Host names are only checked for their form here; they are
// resolved when the listener opens.
func parseAddresses(flag, portFlag, value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var out []string
	for _, element := range strings.Split(value, ",") {
		element = strings.TrimSpace(element)
		address, ok := parseAddress(element)
		switch {
		case ok:
			out = append(out, address)
		case element == "":
			return nil, fmt.Errorf("--%s has an empty element in %q", flag, value)
		case hasPort(element):
			return nil, fmt.Errorf("--%s: %q contains a port; give the port with --%s", flag, element, portFlag)
		default:
			return nil, fmt.Errorf("--%s: %q is not an IP address or host name", flag, element)
		}
	}
	return out, nil
}

// parseAddress accepts an IP address, an IPv6 address in brackets or a host
// name, and returns it without brackets.
func parseAddress(s string) (string, bool) {
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if ip, err := netip.ParseAddr(inner); ok && err == nil && ip.Is6() {
			return ip.String(), true
		}
		return "", false
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.String(), true
	}
	if isHostName(s) {
		return s, true
	}
	return "", false
}

// hasPort tells whether s is an address followed by a numeric port, such as
// 127.0.0.1:80, [::1]:80 or localhost:80.
func hasPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
		return false
	}
	_, ok := parseAddress(host)
	return ok
}

// isHostName tells whether s has the form of a DNS host name (RFC 1123):
// dot-separated labels of 1 to 63 letters, digits and inner hyphens, at most
// 253 characters, an optional final dot. A last label of digits only is a
// mistyped IPv4 address (RFC 3696 §2), not a name.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, label := range labels {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}
