package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// accessEntry is the access-file entry of the token name with grants and
// more lines (an expiry).
func accessEntry(name, grants, more string) string {
	d := sha256.Sum256([]byte(accessToken(name)))
	return fmt.Sprintf("  - name: %s\n    sha256: %s\n    grants: %s\n%s", name, hex.EncodeToString(d[:]), grants, more)
}

// replaceFile puts text into path at once, with a rename, so that the
// access file's watcher never reads half of it.
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// streamEnd waits for lines to close and returns its last line; it fails
// the test when the stream goes on past deadline.
func streamEnd(t *testing.T, what string, lines <-chan string, deadline time.Time) string {
	t.Helper()
	var last string
	timeout := time.After(time.Until(deadline))
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return last
			}
			last = line
		case <-timeout:
			t.Fatalf("%s: the stream goes on", what)
		}
	}
}

// TestAccessStreamsEnd: the open streams of a token end when it expires
// (token expired) and when a reload takes from it the grant they were
// opened with (token revoked), each within a second, while the streams the
// reload left their grant go on; an expired consumer gives its partitions
// back.
func TestAccessStreamsEnd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.yaml")
	expires := time.Now().Add(6 * time.Second).UTC().Truncate(time.Second)
	base := "tokens:\n" + accessEntry("admin", "{admin: true}", "") +
		accessEntry("brief", `{read: ["/"], consume: ["brief"]}`, "    expires: "+expires.Format(time.RFC3339)+"\n")
	replaceFile(t, file, base+accessEntry("narrowed", `{read: ["/secret", "/public"], consume: ["narrowed"]}`, ""))
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
	admin := accessToken("admin")
	for _, name := range []string{"brief", "narrowed"} {
		if r := inst.Do("POST", "/api/v1/create-subscription", admin, `{"subscription":"`+name+`","subject":"/","options":{"recursive":true}}`); r.StatusCode != 200 {
			t.Fatalf("create %s: %d %s", name, r.StatusCode, r.Body)
		}
	}
	observe := func(token, subject string) <-chan string {
		return liveLines(t, inst, "/api/v1/observe-events", accessToken(token), `{"subject":"`+subject+`","options":{"recursive":true}}`)
	}
	consumeAs := func(token string) <-chan string {
		return liveLines(t, inst, "/api/v1/consume-subscription", accessToken(token), `{"subscription":"`+token+`","consumer":"c1"}`)
	}
	briefObserve, briefConsume := observe("brief", "/"), consumeAs("brief")
	secret, public, narrowedConsume := observe("narrowed", "/secret"), observe("narrowed", "/public"), consumeAs("narrowed")
	write := func(pairs ...string) {
		t.Helper()
		if r := inst.Do("POST", "/api/v1/write-events", admin, candidates(pairs...)); r.StatusCode != 200 {
			t.Fatalf("write: %d %s", r.StatusCode, r.Body)
		}
	}
	write("/secret/1", lib+"noted", "/public/1", lib+"noted")

	// The expiry ends the brief token's streams.
	for what, lines := range map[string]<-chan string{"observe": briefObserve, "consume": briefConsume} {
		last := streamEnd(t, "brief "+what, lines, expires.Add(time.Second))
		if !strings.Contains(last, `"type":"error"`) || !strings.Contains(last, "token expired") {
			t.Errorf("the expired token's %s ended with %s", what, last)
		}
	}
	if ended := time.Since(expires); ended < 0 {
		t.Errorf("the brief token's streams ended %v before its expiry", -ended)
	}
	// Its consumer is gone, and its partitions with it.
	waitUntil(t, 5*time.Second, func() bool {
		r := inst.Do("POST", "/api/v1/read-subscription", admin, `{"subscription":"brief"}`)
		return r.StatusCode == 200 && strings.Contains(string(r.Body), `"consumers":[]`)
	})

	// A reload drops /secret and the subscription from the narrowed token.
	replaceFile(t, file, base+accessEntry("narrowed", `{read: ["/public"]}`, ""))
	inst.Signal(syscall.SIGHUP)
	reloaded := time.Now()
	for what, lines := range map[string]<-chan string{"observe of /secret": secret, "consume": narrowedConsume} {
		last := streamEnd(t, "narrowed "+what, lines, reloaded.Add(2*time.Second))
		if !strings.Contains(last, `"type":"error"`) || !strings.Contains(last, "token revoked") {
			t.Errorf("the narrowed token's %s ended with %s", what, last)
		}
	}
	// Its observe of /public, which it may still read, goes on.
	write("/public/2", lib+"noted")
	for deadline := time.After(5 * time.Second); ; {
		select {
		case line, ok := <-public:
			if !ok || strings.Contains(line, `"type":"error"`) {
				t.Fatalf("the observe of /public ended: %s", line)
			}
			if !strings.Contains(line, `"subject":"/public/2"`) {
				continue
			}
		case <-deadline:
			t.Fatal("the observe of /public did not deliver /public/2")
		}
		break
	}
}

// TestAccessSubscriptionMetrics: the series of a subscription in health's
// metrics go only to tokens that may read it (consume of it, or operate)
// and to a token with the metrics grant; every other series goes to all.
func TestAccessSubscriptionMetrics(t *testing.T) {
	inst := startWithAccessFile(t, "scraper", "{metrics: true}", "nobody", "{}")
	for _, name := range []string{"billing", "shipping"} {
		if r := inst.Do("POST", "/api/v1/create-subscription", accessToken("admin"), `{"subscription":"`+name+`","subject":"/orders"}`); r.StatusCode != 200 {
			t.Fatalf("create %s: %d %s", name, r.StatusCode, r.Body)
		}
	}
	for _, c := range []struct {
		token string
		sees  []string
	}{
		{"nobody", nil},
		{"reader", nil},
		{"consumer", []string{"billing"}},
		{"operator", []string{"billing", "shipping"}},
		{"scraper", []string{"billing", "shipping"}},
		{"admin", []string{"billing", "shipping"}},
	} {
		r := inst.Do("GET", "/api/v1/health?format=openmetrics", accessToken(c.token), "")
		body := string(r.Body)
		if r.StatusCode != 200 || !strings.HasSuffix(body, "# EOF\n") || !strings.Contains(body, "eventstore_build_info") {
			t.Fatalf("%s: metrics %d, without the series every token sees:\n%s", c.token, r.StatusCode, body)
		}
		for _, name := range []string{"billing", "shipping"} {
			shown := strings.Contains(body, `subscription="`+name+`"`)
			if want := slices.Contains(c.sees, name); shown != want {
				t.Errorf("%s: the series of %s shown %v, want %v", c.token, name, shown, want)
			}
		}
		if len(c.sees) == 0 && strings.Contains(body, "eventstore_subscription_") {
			t.Errorf("%s: a family of subscription series without one is listed", c.token)
		}
	}
}
