package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestCachesSizedWithinTheMemoryLimit checks that --memory-limit bounds the
// store's caches (docs/reference.md §10): at the smallest limit the live window
// keeps a sixteenth of it in records, however large the events, and the
// latest-id cache a thirty-second, while reads and observers still get
// every event, the older ones from storage.
func TestCachesSizedWithinTheMemoryLimit(t *testing.T) {
	inst := harness.Start(t, bin, harness.Dev("--memory-limit=64MiB")...)
	const events, size = 40, 400 << 10
	blob := strings.Repeat("x", size)
	for request := 0; request < events/5; request++ {
		var parts []string
		for i := 0; i < 5; i++ {
			parts = append(parts, fmt.Sprintf(`{"source":"https://x.example","subject":"/large/%d","type":"io.example.large","data":{"blob":%q}}`, request*5+i, blob))
		}
		mustWrite(t, inst, `{"events":[`+strings.Join(parts, ",")+`]}`)
	}

	r := inst.Do("GET", "/api/v1/diagnostics", harness.Token, "")
	var d struct {
		Storage struct {
			Caches struct {
				Window    struct{ Events, Bytes, LimitBytes int }
				LatestIDs struct{ LimitSubjects int } `json:"latestIds"`
			}
		}
	}
	if r.StatusCode != 200 || json.Unmarshal(r.Body, &d) != nil {
		t.Fatalf("diagnostics: %d %s", r.StatusCode, r.Body)
	}
	window, latest := d.Storage.Caches.Window, d.Storage.Caches.LatestIDs
	if window.LimitBytes != 4<<20 || latest.LimitSubjects != 8192 {
		t.Fatalf("at 64 MiB: window of %d bytes, latest ids of %d subjects; want %d and 8192", window.LimitBytes, latest.LimitSubjects, 4<<20)
	}
	if window.Bytes > window.LimitBytes || window.Events == 0 || window.Events >= events {
		t.Fatalf("window holds %d events of %d bytes after %d events of %d KiB", window.Events, window.Bytes, events, size>>10)
	}

	check := func(what string, got []storedEvent) {
		t.Helper()
		if len(got) != events {
			t.Fatalf("%s: %d events, want %d", what, len(got), events)
		}
		for i, e := range got {
			if e.ID != fmt.Sprint(i) || len(e.Data) != size+len(`{"blob":""}`) {
				t.Fatalf("%s: event %d has id %s and %d bytes of data", what, i, e.ID, len(e.Data))
			}
		}
	}
	var read []storedEvent
	for _, l := range stream(t, inst, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`) {
		read = append(read, parseEvent(t, l.Payload))
	}
	check("read-events", read)
	check("observe-events", observe(t, inst, `{"subject":"/","options":{"recursive":true}}`).events(t, events, 10*time.Second))
}
