package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const token = "Secret-Token-0123456789-abcdefghij"

func newTestAuthenticator(t *testing.T, tok string) (*Authenticator, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	a, err := New(tok, zap.New(core), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return a, logs
}

func TestVerify(t *testing.T) {
	a, _ := newTestAuthenticator(t, token)
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
		ok, presented := a.Verify(tc.header)
		if ok != tc.ok || presented != tc.presents {
			t.Errorf("Verify(%q) = %v, %v; want %v, %v", tc.header, ok, presented, tc.ok, tc.presents)
		}
	}
}

func TestMiddleware(t *testing.T) {
	a, logs := newTestAuthenticator(t, token)
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }), "/api/v1/ping")
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
	_, logs := newTestAuthenticator(t, "secret")
	if logs.FilterMessage("api token is shorter than 32 characters").Len() != 1 {
		t.Fatal("no warning for a short token")
	}
	_, logs = newTestAuthenticator(t, token)
	if logs.Len() != 0 {
		t.Fatalf("unexpected log for a long token: %v", logs.All())
	}
}
