package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

var timePattern = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)

func TestEntryShape(t *testing.T) {
	var buf bytes.Buffer
	log := NewTo(&buf, zapcore.DebugLevel)
	log.Debug("diagnostic", zap.Int("someCount", 3))
	log.Named("httpserver").Info("eventstore is running", zap.Strings("listeners", []string{"http://0.0.0.0:3000"}))
	log.Warn("unusual")
	log.Error("startup failed", zap.Error(errors.New("boom")))

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	wantLevels := []string{"DEBUG", "INFO", "WARN", "ERROR"}
	if len(lines) != len(wantLevels) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(wantLevels), buf.String())
	}
	for i, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("line %d is not a JSON object: %q", i, line)
		}
		if entry["level"] != wantLevels[i] {
			t.Errorf("line %d: level %v, want %s", i, entry["level"], wantLevels[i])
		}
		if ts, _ := entry["time"].(string); !timePattern.MatchString(ts) {
			t.Errorf("line %d: time %q is not RFC 3339 UTC with nanoseconds", i, ts)
		}
		if _, ok := entry["message"].(string); !ok {
			t.Errorf("line %d: no message: %q", i, line)
		}
		_, hasStack := entry["stacktrace"]
		if hasStack != (wantLevels[i] == "ERROR") {
			t.Errorf("line %d: stacktrace present=%v at %s", i, hasStack, wantLevels[i])
		}
	}
	if !strings.HasPrefix(lines[1], `{"time":"`) || !strings.Contains(lines[1], `Z","level":"INFO","logger":"httpserver","caller":"`) {
		t.Errorf("keys not in the order time, level, logger, caller: %s", lines[1])
	}
	if !strings.Contains(lines[1], `"message":"eventstore is running","listeners":["http://0.0.0.0:3000"]}`) {
		t.Errorf("named logger not recorded: %s", lines[1])
	}
}

func TestLevelFilters(t *testing.T) {
	var buf bytes.Buffer
	log := NewTo(&buf, zapcore.WarnLevel)
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Fatalf("level filter failed: %q", buf.String())
	}
}

func TestFxEventsAtDebug(t *testing.T) {
	events := []fxevent.Event{
		&fxevent.Started{},
		&fxevent.Started{Err: errors.New("hook failed")},
		&fxevent.Provided{ConstructorName: "New()", StackTrace: []string{"a.go:1"}, ModuleTrace: []string{"b.go:2"}, OutputTypeNames: []string{"*T"}},
	}
	var info, debug bytes.Buffer
	for _, e := range events {
		FxLogger(NewTo(&info, zapcore.InfoLevel)).LogEvent(e)
		FxLogger(NewTo(&debug, zapcore.DebugLevel)).LogEvent(e)
	}
	if info.Len() != 0 {
		t.Errorf("fx events must log at DEBUG only, got at INFO: %q", info.String())
	}
	if n := strings.Count(debug.String(), `"level":"DEBUG","logger":"fx"`); n != len(events) {
		t.Errorf("got %d DEBUG fx entries, want %d: %q", n, len(events), debug.String())
	}
	if strings.Contains(debug.String(), "trace") || !strings.Contains(debug.String(), `"constructor":"New()"`) {
		t.Errorf("fx trace fields not dropped (or everything dropped): %q", debug.String())
	}
}
