package main

import (
	"runtime/debug"
	"testing"

	"github.com/eventstore-service/eventstore/modules/config"
)

// TestGCPercentFollowsWherePebbleAllocates: a binary built with cgo, whose
// Go heap holds the service's own objects only, collects at 400%; one built
// without cgo, whose Go heap holds Pebble's memtables, at 100%; GOGC wins.
// `go test` runs one of the two builds, CGO_ENABLED=0 the other.
func TestGCPercentFollowsWherePebbleAllocates(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	want := 400
	if buildSetting("CGO_ENABLED") != "1" {
		want = 100
	}
	t.Setenv("GOGC", "")
	tuneRuntime(config.Config{})
	if got := debug.SetGCPercent(100); got != want {
		t.Errorf("GC percent %d with CGO_ENABLED=%q, want %d", got, buildSetting("CGO_ENABLED"), want)
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	tuneRuntime(config.Config{})
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GC percent %d with GOGC=50, want GOGC's", got)
	}
}
