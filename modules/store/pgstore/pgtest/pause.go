package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Pause stops every process of the running cluster with SIGSTOP, the
// postmaster first (so that it starts no new ones): the server keeps its
// connections and its port open but answers nothing, as behind a network
// that drops its packets. Resume continues them; Remove does too.
func (c *Cluster) Pause() error {
	pid, err := c.postmaster()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause the postmaster %d: %w", pid, err)
	}
	return signalAll(children(pid), syscall.SIGSTOP)
}

// Resume continues the processes of a cluster that Pause stopped, the
// postmaster last. It does nothing to processes that run.
func (c *Cluster) Resume() error {
	pid, err := c.postmaster()
	if err != nil {
		return err
	}
	err = signalAll(children(pid), syscall.SIGCONT)
	if e := syscall.Kill(pid, syscall.SIGCONT); e != nil {
		err = errors.Join(err, fmt.Errorf("resume the postmaster %d: %w", pid, e))
	}
	return err
}

// postmaster returns the process id of the cluster's postmaster: the first
// line of postmaster.pid in its data directory.
func (c *Cluster) postmaster() (int, error) {
	raw, err := os.ReadFile(filepath.Join(c.DataDir(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("the cluster does not run: %w", err)
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("postmaster.pid starts with %q, not a process id", first)
	}
	return pid, nil
}

// children returns the process ids of the children of pid (PostgreSQL's
// processes are all children of the postmaster), from
// /proc/<pid>/task/*/children.
func children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(raw)) {
			if child, err := strconv.Atoi(field); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

// signalAll sends sig to every process of pids; a process that ended
// meanwhile is no error.
func signalAll(pids []int, sig syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %s to process %d: %w", sig, pid, err))
		}
	}
	return errors.Join(errs...)
}
