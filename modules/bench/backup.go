package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// runBackup measures the operator's tools on a store of opts.BackupEvents
// events: `eventstore backup` of the running service into a file, and
// `eventstore restore` of that file into a new data directory offline,
// each as the process an operator runs, with its peak memory.
func (r *runner) runBackup() error {
	o := r.opts
	if r.opts.Binary == "" {
		return fmt.Errorf("the backup scenario runs this binary's backup and restore commands")
	}
	total, err := r.target.Count(r.ctx)
	if err != nil {
		return err
	}
	if total < int64(o.BackupEvents) {
		if err := r.target.FillMixed(r.ctx, fmt.Sprintf("/bench/backup/%d", time.Now().UnixNano()), o.BackupEvents-int(total)); err != nil {
			return err
		}
		if total, err = r.target.Count(r.ctx); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "eventstore-bench-backup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(r.target.Token), 0o600); err != nil {
		return err
	}
	file := filepath.Join(dir, "backup.ndjson")
	took, peak, err := r.command("backup", "--url", r.target.URL, "--token-file", tokenFile, "-o", file)
	if err != nil {
		return err
	}
	info, _ := os.Stat(file)
	r.tool("backup", fmt.Sprintf("backup %d events", total), total, took, peak, info.Size())
	took, peak, err = r.command("restore", "--data-directory", filepath.Join(dir, "restored"), file)
	if err != nil {
		return err
	}
	r.tool("restore", fmt.Sprintf("restore %d events offline", total), total, took, peak, info.Size())
	return nil
}

// command runs the binary with args and returns how long it took and its
// peak resident memory, the high-water mark of its own address space read
// from /proc every 10 ms while it runs. (The rusage of a child is no
// measure: Linux counts in it this process's memory, which the child
// shared until its exec.)
func (r *runner) command(args ...string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(r.ctx, r.opts.Binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("eventstore %s: %w", args[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var peak int64
	for {
		select {
		case err := <-exited:
			if err != nil {
				return 0, 0, fmt.Errorf("eventstore %s: %v: %s", args[0], err, out.Bytes())
			}
			return time.Since(start), peak, nil
		case <-tick.C:
			if u, err := processUsage(cmd.Process.Pid); err == nil {
				peak = max(peak, u.PeakRSS)
			}
		}
	}
}

// tool prints and records a measured command.
func (r *runner) tool(scenario, name string, events int64, took time.Duration, peak, bytes int64) {
	rec := Record{Scenario: scenario, Name: name, Events: events, Requests: 1, ElapsedSeconds: took.Seconds(),
		EventsPerSecond: float64(events) / took.Seconds(), PeakRSSBytes: peak}
	fmt.Fprintf(r.out, "%-28s %10.0f events/s  %6.1f s  %7.1f MiB/s  process peak RSS %d MiB\n",
		name, rec.EventsPerSecond, took.Seconds(), float64(bytes)/(1<<20)/took.Seconds(), peak>>20)
	r.report.Scenarios = append(r.report.Scenarios, rec)
}
