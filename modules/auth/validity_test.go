package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/httpkit"
)

// openStream sends a request of token through a's Middleware for a route
// of perm whose handler checks need (unless nil) and watches the stream;
// it returns the channel of the stream's end and the watch's stop.
func openStream(t *testing.T, a *Authenticator, token string, perm httpkit.Permission, need Need) (ended chan error, stop func()) {
	t.Helper()
	ended = make(chan error, 1)
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if need != nil && !Allowed(r.Context(), need) {
			t.Fatal("the need was refused at the start")
		}
		stop = Watch(r.Context(), func(cause error) { ended <- cause })
	}), perm)
	r := httptest.NewRequest("POST", "/api/v1/observe-events", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || stop == nil {
		t.Fatalf("the stream was not opened: %d %s", w.Code, w.Body)
	}
	return ended, stop
}

// accessFileTokens returns the tokens of an access file of entries (name,
// grants, expiry) whose tokens are "token-" + name.
func accessFileTokens(t *testing.T, entries ...[3]string) *Tokens {
	t.Helper()
	text := "tokens:\n"
	for _, e := range entries {
		text += "  - name: " + e[0] + "\n    sha256: " + digestOf("token-"+e[0]) + "\n    grants: " + e[1] + "\n"
		if e[2] != "" {
			text += "    expires: " + e[2] + "\n"
		}
	}
	file := filepath.Join(t.TempDir(), "access.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := LoadAccessFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func endedWith(t *testing.T, what string, ended chan error, want error, within time.Duration) {
	t.Helper()
	select {
	case cause := <-ended:
		if !errors.Is(cause, want) {
			t.Fatalf("%s ended with %v, want %v", what, cause, want)
		}
	case <-time.After(within):
		t.Fatalf("%s did not end within %v", what, within)
	}
}

func goesOn(t *testing.T, what string, ended chan error) {
	t.Helper()
	select {
	case cause := <-ended:
		t.Fatalf("%s ended with %v", what, cause)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestStreamsEndWithTheirToken: a stream ends at its token's expiry, and
// when a reload removes the token, takes the route's permission or a need
// the handler checked, or moves the expiry; a reload that leaves a stream
// what it needs leaves it open.
func TestStreamsEndWithTheirToken(t *testing.T) {
	soon := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ts := accessFileTokens(t,
		[3]string{"brief", `{read: ["/"]}`, soon},
		[3]string{"narrowed", `{read: ["/secret", "/public"], query: true}`, ""},
		[3]string{"moved", `{read: ["/"]}`, later},
		[3]string{"removed", `{read: ["/"]}`, ""})
	a, err := New(ts, zap.NewNop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	reads := func(subject string) Need { return func(g Grants) bool { return g.CanRead(subject) } }
	brief, stopBrief := openStream(t, a, "token-brief", httpkit.PermitRead, reads("/"))
	defer stopBrief()
	secret, stopSecret := openStream(t, a, "token-narrowed", httpkit.PermitRead, reads("/secret"))
	defer stopSecret()
	public, stopPublic := openStream(t, a, "token-narrowed", httpkit.PermitRead, reads("/public"))
	defer stopPublic()
	query, stopQuery := openStream(t, a, "token-narrowed", httpkit.PermitQuery, nil)
	defer stopQuery()
	moved, stopMoved := openStream(t, a, "token-moved", httpkit.PermitRead, nil)
	defer stopMoved()
	removed, stopRemoved := openStream(t, a, "token-removed", httpkit.PermitRead, nil)
	defer stopRemoved()

	endedWith(t, "the brief token's stream", brief, ErrTokenExpired, 2*time.Second)
	goesOn(t, "the observe of /secret before the reload", secret)

	a.Replace(accessFileTokens(t,
		[3]string{"brief", `{read: ["/"]}`, soon},
		[3]string{"narrowed", `{read: ["/public"]}`, ""},
		[3]string{"moved", `{read: ["/"]}`, time.Now().Add(200 * time.Millisecond).UTC().Format(time.RFC3339Nano)}))
	endedWith(t, "the stream of /secret", secret, ErrTokenRevoked, time.Second)
	endedWith(t, "the query stream", query, ErrTokenRevoked, time.Second)
	endedWith(t, "the removed token's stream", removed, ErrTokenRevoked, time.Second)
	endedWith(t, "the stream whose expiry moved closer", moved, ErrTokenExpired, 2*time.Second)
	goesOn(t, "the stream of /public", public)

	// A stream opened by a token that a reload removed since, or that
	// lost the need, ends at once.
	p := &passed{tok: &ts.list[1], a: a, needs: []Need{reads("/secret")}}
	ended := make(chan error, 1)
	Watch(context.WithValue(context.Background(), passedKey{}, p), func(cause error) { ended <- cause })
	endedWith(t, "a stream of a need lost before it was watched", ended, ErrTokenRevoked, 10*time.Millisecond) // called before Watch returned
}
