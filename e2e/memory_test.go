package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// podMemory is the memory limit of the shipped Kubernetes manifests.
const podMemory = 1 << 30

// memoryCgroup creates a cgroup v1 memory controller group limited to
// limit bytes and returns its directory, or "" where the test may not
// create one (then the caller falls back to the process's peak RSS).
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("eventstore-e2e-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Logf("no memory cgroup (%v): checking the peak RSS instead", err)
		return ""
	}
	t.Cleanup(func() {
		// The process has left by now; its memory is uncharged lazily.
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Logf("cannot limit the memory cgroup (%v): checking the peak RSS instead", err)
		return ""
	}
	return dir
}

// cgroupValue reads a number from a cgroup file, or a "key value" line of it.
func cgroupValue(t *testing.T, dir, file, key string) int64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		fields := strings.Fields(line)
		if key == "" && len(fields) == 1 || len(fields) == 2 && fields[0] == key {
			n, _ := strconv.ParseInt(fields[len(fields)-1], 10, 64)
			return n
		}
	}
	return 0
}

// TestStaysWithinThePodsMemory runs the service in a 1 GiB memory cgroup,
// as the shipped manifests do, with its memory limit taken from the cgroup
// by default, under writes, 200 observers and more heavy queries at once
// than it admits: nothing is killed for memory, the excess queries get 503
// and the admitted ones end within their budgets.
func TestStaysWithinThePodsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load")
	}
	cgroup := memoryCgroup(t, podMemory)
	args := harness.Dev()
	var inst *harness.Instance
	if cgroup != "" {
		script := `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`
		inst = harness.Start(t, "/bin/sh", append([]string{"-c", script, "sh", cgroup, bin}, args...)...)
	} else {
		inst = harness.Start(t, bin, append(args, "--memory-limit=921MiB")...)
	}
	announced := inst.WaitForLog("eventstore is running", time.Second)
	if cgroup != "" && (announced["memoryLimitSource"] != "cgroup" || announced["memoryLimit"] != float64(podMemory*9/10)) {
		t.Fatalf("memory limit %v from %v, want 90%% of the cgroup's", announced["memoryLimit"], announced["memoryLimitSource"])
	}

	// A store of 150,000 events of a few hundred bytes.
	for batch := 0; batch < 150; batch++ {
		mustWrite(t, inst, batchBody(batch, 1000))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var (
		wg                         sync.WaitGroup
		writes, writeErrors        atomic.Int64
		observed                   atomic.Int64
		queriesOK, queriesRefused  atomic.Int64
		queriesFailed, queryOthers atomic.Int64
	)
	post := func(path, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", inst.URL("http")+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+harness.Token)
		return inst.Client.Do(req)
	}
	for o := 0; o < 200; o++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := post("/api/v1/observe-events", `{"subject":"/","options":{"recursive":true,"lowerBound":{"id":"150000","type":"inclusive"}}}`)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				if len(line) > 8 && string(line[:9]) == `{"type":"` && strings.HasPrefix(string(line), `{"type":"event"`) {
					observed.Add(1)
				}
			}
		}()
	}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				time.Sleep(50 * time.Millisecond) // about 16,000 events/s in all
				resp, err := post("/api/v1/write-events", batchBody(1000+w*10000+n, 100))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					writes.Add(100)
				} else {
					writeErrors.Add(1)
				}
			}
		}()
	}
	heavy := queryBody(`FROM e IN events ORDER BY e.data.amount DESC PROJECT INTO e`)
	for q := 0; q < 16; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := post(queryPath, heavy)
				if err != nil {
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 503:
					queriesRefused.Add(1)
					time.Sleep(100 * time.Millisecond)
				case resp.StatusCode != 200:
					queryOthers.Add(1)
				case strings.Contains(string(body), `"type":"error"`):
					queriesFailed.Add(1) // over its budget: ended with an error line
				default:
					queriesOK.Add(1)
				}
			}
		}()
	}
	var peakRSS atomic.Int64
	go func() { // the resident set, sampled
		for ctx.Err() == nil {
			peakRSS.Store(max(peakRSS.Load(), residentSet(inst.Pid())))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	wg.Wait()
	if inst.Exited() {
		t.Fatalf("the service ended under load (exit code %d)", inst.Wait(time.Second))
	}
	t.Logf("writes %d (errors %d), observed %d, queries ok %d, over their budget %d, refused %d, other %d; peak RSS sampled %d MiB",
		writes.Load(), writeErrors.Load(), observed.Load(), queriesOK.Load(), queriesFailed.Load(), queriesRefused.Load(), queryOthers.Load(), peakRSS.Load()>>20)
	if peakRSS.Load() > podMemory {
		t.Fatalf("resident set %d MiB over the pod's %d MiB", peakRSS.Load()>>20, podMemory>>20)
	}
	if writes.Load() == 0 || writeErrors.Load() > 0 || observed.Load() == 0 || queryOthers.Load() > 0 || queriesRefused.Load() == 0 {
		t.Fatal("the load did not run as planned (see the figures above)")
	}
	if cgroup != "" {
		peak := cgroupValue(t, cgroup, "memory.max_usage_in_bytes", "")
		kills := cgroupValue(t, cgroup, "memory.oom_control", "oom_kill")
		t.Logf("cgroup peak %d MiB of %d MiB, OOM kills %d", peak>>20, podMemory>>20, kills)
		if kills > 0 {
			t.Fatalf("%d OOM kills in the cgroup", kills)
		}
		return
	}
}

// residentSet returns the resident set of a process in bytes.
func residentSet(pid int) int64 { return procMemory(pid, "VmRSS") }

// procMemory returns a memory figure of /proc/<pid>/status in bytes, e.g.
// VmRSS (resident now) or VmHWM (its peak); 0 when there is none.
func procMemory(pid int, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, field+":") {
			kib, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kib << 10
		}
	}
	return 0
}

// batchBody is a write of n events of a few hundred bytes, numbered from
// first, on 100 subjects.
func batchBody(first, n int) string {
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		k := first*1000 + i
		fmt.Fprintf(&b, `{"source":"https://x.example","subject":"/load/%d","type":"io.example.loaded","data":{"amount":%d,"note":"an ordinary event of a few hundred bytes, with a note that makes it so","items":[{"sku":"a-%d","qty":1},{"sku":"b-%d","qty":3}]}}`, k%100, k, k%7, k%11)
	}
	b.WriteString(`]}`)
	return b.String()
}
