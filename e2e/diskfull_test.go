package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// smallDisk is where a disk-full test keeps its data directory.
type smallDisk struct {
	// dir is the directory on the small file system.
	dir string
	// free makes room on it again.
	free func(t *testing.T)
	// wrap returns the command line that runs the binary with args on it.
	wrap func(args ...string) (string, []string)
}

// newSmallDisk mounts an 8 MiB tmpfs holding a 2 MiB filler file, which
// free removes. Where mounting is not permitted, it falls back to a file
// size limit of 4 MiB (ulimit -f) that only the wrapped binary runs under;
// free then drops the wrapper.
func newSmallDisk(t *testing.T) *smallDisk {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	direct := func(args ...string) (string, []string) { return bin, args }
	d := &smallDisk{dir: filepath.Join(mnt, "data"), wrap: direct}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Logf("mount tmpfs: %v %s; limiting the file size with ulimit -f instead", err, strings.TrimSpace(string(out)))
		d.wrap = func(args ...string) (string, []string) {
			// sh counts ulimit -f in 512-byte blocks.
			return "/bin/sh", append([]string{"-c", `ulimit -f 8192 && exec "$0" "$@"`, bin}, args...)
		}
		d.free = func(*testing.T) { d.wrap = direct }
		return d
	}
	t.Cleanup(func() { // after the instances' cleanups, which kill them
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	d.free = func(t *testing.T) {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestDiskFull fills the disk under the real binary: the write that does
// not fit answers 507, reads go on, health fails and ping stays up; after
// space is freed and a restart, every acknowledged event is there and the
// store verifies.
func TestDiskFull(t *testing.T) {
	disk := newSmallDisk(t)
	start := func() *harness.Instance {
		cmd, args := disk.wrap("run", "--api-token="+harness.Token, "--data-directory="+disk.dir, "--http-enabled", "--https-enabled=false", "--http-port=0")
		return harness.Start(t, cmd, args...)
	}
	inst := start()

	acked := map[string]string{}
	var refused harness.Response
	for i := 0; ; i++ {
		if i == 10_000 {
			t.Fatalf("%d events written without filling the disk", len(acked))
		}
		var parts []string
		for j := 0; j < 16; j++ {
			parts = append(parts, fmt.Sprintf(`{"source":"https://full.example.com","subject":"/full/%d","type":"io.example.filled","data":{"pad":%q}}`, j, strings.Repeat(fmt.Sprint(i%10), 4000)))
		}
		r, events := writeEvents(t, inst, `{"events":[`+strings.Join(parts, ",")+`]}`)
		if r.StatusCode != 200 {
			refused = r
			break
		}
		for _, e := range events {
			acked[e.ID] = string(e.raw)
		}
	}
	if !strings.HasPrefix(string(refused.Body), "insufficient storage: ") {
		t.Fatalf("write on a full disk after %d events: %d %s", len(acked), refused.StatusCode, refused.Body)
	}
	checkError(t, refused, 507, strings.TrimSuffix(string(refused.Body), "\n"))
	t.Logf("disk full after %d events: %s", len(acked), strings.TrimSpace(string(refused.Body)))
	if r, _ := writeEvents(t, inst, candidates("/small", "io.example.small")); r.StatusCode != 507 {
		t.Fatalf("write after the failure: %d %s", r.StatusCode, r.Body)
	}

	if n := checkStore(t, inst, acked); n != len(acked) {
		t.Fatalf("%d events readable, %d acknowledged", n, len(acked))
	}
	health := inst.Do("GET", "/api/v1/health", harness.Token, "")
	var report map[string]any
	if err := json.Unmarshal(health.Body, &report); err != nil || health.StatusCode != 503 || report["status"] != "fail" {
		t.Fatalf("health on a full disk: %d %s", health.StatusCode, health.Body)
	}
	if r := inst.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("ping on a full disk: %d %s", r.StatusCode, r.Body)
	}
	if failed := inst.Logs("storage failed, refusing writes"); len(failed) != 1 || failed[0]["diskFull"] != true {
		t.Fatalf("storage failed entries: %v", failed)
	}

	disk.free(t)
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after the failure; stdout:\n%s", code, inst.Stdout())
	}
	inst = start()
	if n := checkStore(t, inst, acked); n < len(acked) {
		t.Fatalf("%d events after the restart, %d acknowledged", n, len(acked))
	}
	mustWrite(t, inst, candidates("/after", "io.example.after"))
	inst.Signal(syscall.SIGTERM)
	if code := inst.Wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if code, out := runVerify(t, disk.dir); code != 0 || !strings.Contains(out, "verified") {
		t.Fatalf("verify after the disk was full: exit %d, %s", code, out)
	}
}
