package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// The store of TestUILargeDownloads: largeEvents events of about 4 KiB,
// so that its backup and the export of all its events pass 1 GiB.
const (
	largeEvents   = 260_000
	largeBatch    = 500
	largePad      = 4000
	largeMinBytes = 1 << 30
	largeQuery    = "FROM e IN events PROJECT INTO e"
)

// TestUILargeDownloads saves a backup and a query export of more than
// 1 GiB each through the console in Chromium, and compares each file byte
// for byte with what curl receives from the API (the export without the
// stream's heartbeat lines); the tab's memory stays flat meanwhile. A
// backup cancelled in the page, and one cancelled in the browser's
// downloads, end with the page saying so and no completed file. (About
// 40 s and 3.5 GB of disk on a machine of two cores.)
func TestUILargeDownloads(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed: ", err)
	}
	inst := harness.Start(t, bin, harness.Dev("--with-ui")...)
	buildLargeStore(t, inst)
	dir := t.TempDir()

	b := newBrowser(t, 1280, 900)
	downloads := b.allowDownloads()
	b.signIn(inst, harness.Token)

	// The backup: curl's, then the console's.
	want := filepath.Join(dir, "backup-curl.ndjson")
	curlTo(t, inst, "/api/v1/backup", `{}`, want)
	b.eval(`location.hash = "#/operations"`, nil)
	b.waitFor("operations view", `!document.querySelector("#view-operations").hidden`, 5*time.Second)
	start := time.Now()
	b.run("backup", chromedp.Click("#backup-start", chromedp.ByQuery))
	peakHeap, peakRSS := b.whileRunning("backup", "#backup", "#backup-error", "#backup-count")
	name, got := downloads.nextPath(t, 10*time.Minute)
	took := time.Since(start)
	size := sameFiles(t, "backup", got, want, false)
	if size < largeMinBytes {
		t.Fatalf("the backup has %d bytes, fewer than 1 GiB", size)
	}
	if msg := b.text("#backup-summary"); !strings.Contains(msg, "all "+formatCount(largeEvents)+" announced events") {
		t.Errorf("backup summary %q", msg)
	}
	t.Logf("backup of %d events through Chromium: %s, %d bytes in %.1f s (%.0f MiB/s), identical to curl's; JS heap peak %.1f MiB, renderer peak %.0f MiB",
		largeEvents, name, size, took.Seconds(), float64(size)/(1<<20)/took.Seconds(), peakHeap, peakRSS)
	if peakHeap > maxHeapMiB || peakRSS > maxRSSMiB {
		t.Errorf("backup memory: JS heap peak %.1f MiB (bound %.0f), renderer peak %.0f MiB (bound %.0f)", peakHeap, maxHeapMiB, peakRSS, maxRSSMiB)
	}
	b.screenshot("large-backup")
	os.Remove(got)
	os.Remove(want)

	// Cancelled in the page: the server stops, the browser's download fails.
	b.run("backup to cancel", chromedp.Click("#backup-start", chromedp.ByQuery))
	b.waitFor("a few MiB sent", `Number(document.querySelector("#backup-count").dataset.bytes) > 20 * 1024 * 1024`, time.Minute)
	b.run("cancel", chromedp.Click("#backup-cancel", chromedp.ByQuery))
	b.waitFor("cancelled", `document.querySelector("#backup").dataset.state === "cancelled"`, 30*time.Second)
	guid, _ := downloads.latest()
	waitUntil(t, 30*time.Second, func() bool {
		_, state := downloads.latest()
		return state == cdpbrowser.DownloadProgressStateCanceled
	})
	if msg := b.text("#backup-count"); !strings.HasPrefix(msg, "Cancelled after ") {
		t.Errorf("after Cancel the page says %q", msg)
	}
	b.screenshot("large-backup-cancelled")

	// Cancelled in the browser: the page says the browser stopped it.
	b.run("backup to stop in the browser", chromedp.Click("#backup-start", chromedp.ByQuery))
	b.waitFor("a few MiB sent", `Number(document.querySelector("#backup-count").dataset.bytes) > 20 * 1024 * 1024`, time.Minute)
	var stopped string
	waitUntil(t, 30*time.Second, func() bool {
		stopped, _ = downloads.latest()
		return stopped != guid
	})
	b.run("cancel in the browser", chromedp.ActionFunc(func(ctx context.Context) error {
		return cdpbrowser.CancelDownload(stopped).Do(ctx)
	}))
	b.waitFor("failed", `document.querySelector("#backup").dataset.state === "error"`, 30*time.Second)
	if msg := b.text("#backup-error"); !strings.Contains(msg, "the browser stopped the download") {
		t.Errorf("after the browser cancelled the download the page says %q", msg)
	}
	b.screenshot("large-backup-browser-cancelled")

	// The export: run the query, keep its first rows, export them all.
	want = filepath.Join(dir, "query-curl.ndjson")
	curlTo(t, inst, "/api/v1/run-eventql-query", fmt.Sprintf(`{"query":%q}`, largeQuery), want)
	b.eval(`location.hash = "#/query"`, nil)
	b.run("query", chromedp.SetValue("#query-text", largeQuery, chromedp.ByQuery), chromedp.Click("#query-run", chromedp.ByQuery))
	b.waitFor("some rows", `Number(document.querySelector("#query-count").dataset.value) > 1000`, time.Minute)
	b.run("cancel the query", chromedp.Click("#query-cancel", chromedp.ByQuery))
	b.waitFor("cancelled", `document.querySelector("#view-query").dataset.state === "cancelled"`, 10*time.Second)
	start = time.Now()
	b.run("export", chromedp.Click("#query-export", chromedp.ByQuery))
	name, got = downloads.nextPath(t, 10*time.Minute)
	took = time.Since(start)
	b.waitFor("export done", `document.querySelector("#query-export-status").dataset.state === "done"`, 30*time.Second)
	size = sameFiles(t, "export", got, want, true)
	if size < largeMinBytes {
		t.Fatalf("the export has %d bytes, fewer than 1 GiB", size)
	}
	if msg := b.text("#query-export-status"); !strings.HasPrefix(msg, "Exported "+formatCount(largeEvents)+" rows") {
		t.Errorf("export status %q", msg)
	}
	t.Logf("export of %q through Chromium: %s, %d bytes in %.1f s, identical to curl's without heartbeats", largeQuery, name, size, took.Seconds())
	b.screenshot("large-export")
}

// buildLargeStore writes largeEvents events of about 4 KiB each.
func buildLargeStore(t *testing.T, inst *harness.Instance) {
	t.Helper()
	started := time.Now()
	pad := strings.Repeat("x", largePad)
	for first := 0; first < largeEvents; first += largeBatch {
		var body strings.Builder
		body.WriteString(`{"events":[`)
		for i := first; i < first+largeBatch; i++ {
			if i > first {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"source":"https://shop.example.com","subject":"/orders/%d","type":"com.example.shop.order-placed","data":{"i":%d,"pad":"%s"}}`, i%10000, i, pad)
		}
		body.WriteString(`]}`)
		if r := inst.Do("POST", "/api/v1/write-events", harness.Token, body.String()); r.StatusCode != 200 {
			t.Fatalf("write-events: %d %s", r.StatusCode, r.Body)
		}
	}
	t.Logf("store: %d events of %d bytes of data written in %s", largeEvents, largePad, time.Since(started).Round(time.Millisecond))
}

// curlTo has curl POST body to path and write the answer to file.
func curlTo(t *testing.T, inst *harness.Instance, path, body, file string) {
	t.Helper()
	started := time.Now()
	cmd := exec.Command("curl", "-sS", "--fail", "-o", file, "-X", "POST", "-H", "Authorization: Bearer "+harness.Token,
		"-H", "Content-Type: application/json", "--data", body, inst.URL("http")+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl %s: %v\n%s", path, err, out)
	}
	t.Logf("curl %s: %s", path, time.Since(started).Round(time.Millisecond))
}

// sameFiles compares the browser's file with curl's byte for byte (the
// heartbeat lines of curl's left out when heartbeats is set) and returns
// the size of the browser's.
func sameFiles(t *testing.T, what, browser, curl string, heartbeats bool) int64 {
	t.Helper()
	a, err := os.Open(browser)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := os.Open(curl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ra, rc := bufio.NewReaderSize(a, 1<<20), bufio.NewReaderSize(c, 1<<20)
	ha, hc := sha256.New(), sha256.New()
	var offset int64
	for line := 1; ; line++ {
		la, errA := ra.ReadBytes('\n')
		lc, errC := rc.ReadBytes('\n')
		for heartbeats && bytes.HasPrefix(lc, []byte(`{"type":"heartbeat"`)) {
			lc, errC = rc.ReadBytes('\n')
		}
		if !bytes.Equal(la, lc) {
			t.Fatalf("%s: the browser's file differs from curl's at line %d (byte %d): %.80q… against %.80q…", what, line, offset, la, lc)
		}
		ha.Write(la)
		hc.Write(lc)
		offset += int64(len(la))
		if errA != nil || errC != nil {
			if errA != io.EOF || errC != io.EOF {
				t.Fatalf("%s: reading the files: %v, %v", what, errA, errC)
			}
			break
		}
	}
	t.Logf("%s: %d bytes, sha256 %x in both files", what, offset, ha.Sum(nil))
	return offset
}
