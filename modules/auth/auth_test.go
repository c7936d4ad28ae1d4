package auth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
)

const token = "Secret-Token-0123456789-abcdefghij"

func newTestAuthenticator(t *testing.T, tok string) (*Authenticator, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	a, err := New(SingleToken(tok), zap.New(core), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return a, logs
}

func TestVerify(t *testing.T) {
	ts := SingleToken(token)
	cases := []struct {
		header       string
		ok, presents bool
	}{
		{"Bearer " + token, true, true},
		{"bearer " + token, true, true},
		{"BEARER  " + token, true, true},
		{"Bearer " + token + "x", false, true},
		{"Bearer " + strings.ToLower(token), false, true},
		{"Bearer", false, false},
		{"Bearer ", false, false},
		{"Basic " + token, false, false},
		{token, false, false},
		{"", false, false},
	}
	for _, tc := range cases {
		tok, presented := ts.Identify(tc.header)
		if (tok != nil) != tc.ok || presented != tc.presents {
			t.Errorf("Identify(%q) = %v, %v; want %v, %v", tc.header, tok, presented, tc.ok, tc.presents)
		}
	}
}

func TestMiddleware(t *testing.T) {
	a, logs := newTestAuthenticator(t, token)
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }), httpkit.PermitAnyToken, "/api/v1/ping")
	cases := []struct {
		name, path, header string
		status             int
		challenge          string
	}{
		{"ping is public", "/api/v1/ping", "", 299, ""},
		{"ping ignores a wrong token", "/api/v1/ping", "Bearer wrong", 299, ""},
		{"ui is public", "/", "", 299, ""},
		{"health needs the token", "/api/v1/health", "", 401, `Bearer realm="eventstore"`},
		{"unknown api path needs the token", "/api/v1/nope", "", 401, `Bearer realm="eventstore"`},
		{"ping sub path needs the token", "/api/v1/ping/x", "", 401, `Bearer realm="eventstore"`},
		{"ping with a trailing slash needs the token", "/api/v1/ping/", "", 401, `Bearer realm="eventstore"`},
		{"ping with a doubled slash needs the token", "//api/v1/ping", "", 401, `Bearer realm="eventstore"`},
		{"a doubled slash is still under /api/", "//api/v1/write-events", "", 401, `Bearer realm="eventstore"`},
		{"a dot segment is still under /api/", "/x/../api/v1/health", "", 401, `Bearer realm="eventstore"`},
		{"wrong token", "/api/v1/verify-api-token", "Bearer wrong", 401, `Bearer realm="eventstore", error="invalid_token"`},
		{"right token", "/api/v1/verify-api-token", "Bearer " + token, 299, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", tc.path+"?token="+token, nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.status || rec.Header().Get("WWW-Authenticate") != tc.challenge {
				t.Fatalf("got %d %q, want %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"), tc.status, tc.challenge)
			}
			if tc.status == 401 && rec.Body.String() != "unauthorized\n" {
				t.Fatalf("401 body %q", rec.Body.String())
			}
		})
	}
	if got := testutil.ToFloat64(a.failures); got != 8 {
		t.Errorf("eventstore_auth_failures_total = %v, want 8", got)
	}
	// Failures are logged at most once per FailureLogInterval: the first.
	warnings := logs.FilterMessage("authentication failed").All()
	if len(warnings) != 1 {
		t.Fatalf("want 1 authentication failed entry within the interval, got %d", len(warnings))
	}
	for _, e := range warnings {
		for key, v := range e.ContextMap() {
			if s, _ := v.(string); strings.Contains(s, token) || strings.Contains(s, "wrong") {
				t.Fatalf("log field %s leaks a token: %q", key, s)
			}
		}
	}
}

func TestShortTokenWarns(t *testing.T) {
	for tok, warns := range map[string]bool{"secret": true, token: false, token + "\nshort": true, token + "\n" + token + "2": false} {
		core, logs := observer.New(zapcore.DebugLevel)
		if _, err := LoadTokens(config.Config{APIToken: tok}, zap.New(core)); err != nil {
			t.Fatal(err)
		}
		if got := logs.FilterMessage("api token is shorter than 32 characters").Len() == 1; got != warns || logs.Len() > 1 {
			t.Errorf("%q: warned %v (%d lines), want %v", tok, got, logs.Len(), warns)
		}
	}
}

// TestPermissions checks a token's grants against routes: 403 without the
// route's permission (counted, audited, never naming what was needed),
// 401 for an expired token, the token in the context of what passes, and
// an audit line for the routes of operate.
func TestPermissions(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/access.yaml"
	text := "tokens:\n" +
		"  - name: reader\n    sha256: " + digestOf("reader-token") + "\n    grants: {read: [/orders]}\n" +
		"  - name: operator\n    sha256: " + digestOf("operator-token") + "\n    grants: {operate: true}\n" +
		"  - name: gone\n    sha256: " + digestOf("gone-token") + "\n    grants: {admin: true}\n    expires: 2020-01-01T00:00:00Z\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := LoadAccessFile(file)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	a, err := New(ts, zap.New(core), reg)
	if err != nil {
		t.Fatal(err)
	}
	var seen string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = TokenOf(r.Context()).Name
		w.WriteHeader(http.StatusOK)
	})
	cases := []struct {
		perm   httpkit.Permission
		token  string
		status int
	}{
		{httpkit.PermitRead, "reader-token", 200},
		{httpkit.PermitWrite, "reader-token", 403},
		{httpkit.PermitOperate, "reader-token", 403},
		{httpkit.PermitAnyToken, "reader-token", 200},
		{httpkit.PermitOperate, "operator-token", 200},
		{httpkit.PermitRead, "operator-token", 403},
		{httpkit.PermitAdmin, "operator-token", 403},
		{httpkit.PermitAnyToken, "gone-token", 401},
	}
	for _, c := range cases {
		seen = ""
		r := httptest.NewRequest("POST", "/api/v1/some-route", nil)
		r.Header.Set("Authorization", "Bearer "+c.token)
		rec := httptest.NewRecorder()
		a.Middleware(next, c.perm).ServeHTTP(rec, r)
		if rec.Code != c.status {
			t.Errorf("%s on a route of permission %d: %d, want %d", c.token, c.perm, rec.Code, c.status)
		}
		if c.status == 403 && rec.Body.String() != "forbidden: insufficient permissions\n" {
			t.Errorf("403 body %q", rec.Body.String())
		}
		if (c.status == 200) != (seen != "") {
			t.Errorf("%s: the handler saw token %q", c.token, seen)
		}
	}
	if got := testutil.ToFloat64(a.denied.WithLabelValues("forbidden")); got != 4 {
		t.Errorf("forbidden denials: %v, want 4", got)
	}
	if got := testutil.ToFloat64(a.denied.WithLabelValues("unauthorized")); got != 1 {
		t.Errorf("unauthorized denials: %v, want 1", got)
	}
	audited := logs.FilterMessage("request audited").All()
	if len(audited) != 5 { // four 403s and the operator's operate route
		t.Fatalf("%d audit lines, want 5: %v", len(audited), audited)
	}
	for _, e := range audited {
		m := e.ContextMap()
		if m["token"] != "reader" && m["token"] != "operator" || m["status"] == nil || m["remote"] == nil || m["duration"] == nil {
			t.Errorf("audit line %v", m)
		}
		for _, v := range m {
			if s, _ := v.(string); strings.Contains(s, "-token") {
				t.Errorf("audit line leaks a token: %v", m)
			}
		}
	}
}
