package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseAddresses(t *testing.T) {
	cases := []struct {
		value string
		want  []string
	}{
		{"", nil},
		{"  ", nil},
		{"127.0.0.1", []string{"127.0.0.1"}},
		{"::1", []string{"::1"}},
		{"[::1]", []string{"::1"}},
		{"[0:0:0:0:0:0:0:1]", []string{"::1"}},
		{"0.0.0.0", []string{"0.0.0.0"}},
		{"::", []string{"::"}},
		{"fe80::1%eth0", []string{"fe80::1%eth0"}},
		{"localhost", []string{"localhost"}},
		{"localhost.", []string{"localhost."}},
		{"db-1.example.com", []string{"db-1.example.com"}},
		{"127.0.0.1,[::1]", []string{"127.0.0.1", "::1"}},
		{"127.0.0.1, ::1 ,localhost", []string{"127.0.0.1", "::1", "localhost"}},
		{"127.0.0.1,127.0.0.1", []string{"127.0.0.1", "127.0.0.1"}}, // bound once, see httpserver
	}
	for _, tc := range cases {
		got, err := parseAddresses(FlagHTTPAddress, FlagHTTPPort, tc.value)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseAddresses(%q) = %q, %v; want %q", tc.value, got, err, tc.want)
		}
	}
}

func TestParseAddressesRejects(t *testing.T) {
	cases := []struct {
		value string
		want  string
	}{
		{",", `--http-address has an empty element in ","`},
		{"127.0.0.1,", `--http-address has an empty element in "127.0.0.1,"`},
		{"127.0.0.1,,::1", "has an empty element"},
		{"127.0.0.1, ,::1", "has an empty element"},
		{"127.0.0.1:80", `--http-address: "127.0.0.1:80" contains a port; give the port with --http-port`},
		{"[::1]:3000", `"[::1]:3000" contains a port`},
		{"localhost:3000", `"localhost:3000" contains a port`},
		{"::1,localhost:0", `"localhost:0" contains a port`},
		{"garbage!", `--http-address: "garbage!" is not an IP address or host name`},
		{"http://127.0.0.1", "is not an IP address or host name"},
		{"127.0.0.1/8", "is not an IP address or host name"},
		{"256.1.1.1", "is not an IP address or host name"},
		{"127.1", "is not an IP address or host name"},
		{"[127.0.0.1]", "is not an IP address or host name"},
		{"[::1", "is not an IP address or host name"},
		{"::1]", "is not an IP address or host name"},
		{"-leading.example", "is not an IP address or host name"},
		{"trailing-.example", "is not an IP address or host name"},
		{"a..b", "is not an IP address or host name"},
		{"under_score", "is not an IP address or host name"},
		{strings.Repeat("a", 64) + ".example", "is not an IP address or host name"},
		{strings.Repeat("abcdefg.", 32) + "com", "is not an IP address or host name"},
		{"127.0.0.1 ::1", "is not an IP address or host name"},
		{"localhost:http", "is not an IP address or host name"},
	}
	for _, tc := range cases {
		got, err := parseAddresses(FlagHTTPAddress, FlagHTTPPort, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseAddresses(%q) = %q, %v; want an error containing %q", tc.value, got, err, tc.want)
		}
	}
}

func TestLoadAddresses(t *testing.T) {
	dev := []string{"--api-token=secret", "--data-directory-temporary", "--http-enabled", "--https-enabled=false"}
	cfg, err := load(t, dev...)
	if err != nil || cfg.HTTP.Addresses != nil || cfg.HTTPS.Addresses != nil {
		t.Fatalf("default addresses: %q %q, %v; want none (all interfaces)", cfg.HTTP.Addresses, cfg.HTTPS.Addresses, err)
	}

	t.Setenv("EVENTSTORE_HTTP_ADDRESS", "192.0.2.1")
	t.Setenv("EVENTSTORE_HTTPS_ADDRESS", "[::1],localhost")
	cfg, err = load(t, append([]string{"--http-address", "127.0.0.1,::1"}, dev...)...) // the command line wins
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := []string{"127.0.0.1", "::1"}; !reflect.DeepEqual(cfg.HTTP.Addresses, want) {
		t.Errorf("HTTP addresses %q, want %q", cfg.HTTP.Addresses, want)
	}
	if want := []string{"::1", "localhost"}; !reflect.DeepEqual(cfg.HTTPS.Addresses, want) {
		t.Errorf("HTTPS addresses %q (from the environment), want %q", cfg.HTTPS.Addresses, want)
	}

	t.Setenv("EVENTSTORE_HTTPS_ADDRESS", "[::1]:4000")
	if _, err := load(t, dev...); err == nil || err.Error() != `--https-address: "[::1]:4000" contains a port; give the port with --https-port` {
		t.Errorf("port in EVENTSTORE_HTTPS_ADDRESS: got %v", err)
	}
}
