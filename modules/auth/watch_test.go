package auth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/config"
)

// TestWatcherReadsTheTokenFileAgain changes an --api-token-file: a reload
// puts its tokens in force, marks the removed token removed and
// keeps the kept one's; an empty version is refused and changes nothing.
func TestWatcherReadsTheTokenFileAgain(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("old-token-0123456789-0123456789-01\n")
	cfg := config.Config{APIToken: "old-token-0123456789-0123456789-01", APITokenFile: file}
	ts, err := LoadTokens(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(ts, zap.NewNop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	w := NewWatcher(a, cfg, zap.New(core))
	old, _ := a.Tokens().Identify("Bearer old-token-0123456789-0123456789-01")
	write("old-token-0123456789-0123456789-01\nnew-token-0123456789-0123456789-01\n")
	w.Reload()
	kept, _ := a.Tokens().Identify("Bearer old-token-0123456789-0123456789-01")
	if tok, _ := a.Tokens().Identify("Bearer new-token-0123456789-0123456789-01"); tok == nil || kept == nil || kept.validity != old.validity {
		t.Fatalf("after adding a line: new %v, old kept %v", tok, kept)
	}
	write("new-token-0123456789-0123456789-01\n")
	w.Reload()
	if tok, _ := a.Tokens().Identify("Bearer old-token-0123456789-0123456789-01"); tok != nil || !old.validity.removed {
		t.Fatalf("the removed token: %v, removed %v", tok, old.validity.removed)
	}
	write("  \n")
	w.Reload()
	if tok, _ := a.Tokens().Identify("Bearer new-token-0123456789-0123456789-01"); tok == nil {
		t.Fatal("an empty file replaced the tokens")
	}
	if logs.FilterMessage("access file rejected").Len() != 1 || logs.FilterMessage("access file reloaded").Len() != 2 {
		t.Fatalf("log lines: %v", logs.All())
	}
}
