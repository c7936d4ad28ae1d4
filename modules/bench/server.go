package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is the processes started for a benchmark: the nodes of an
// eventstore service (one, or several on one PostgreSQL database) or the
// baseline. Their resource use is added up.
type Server struct {
	cmds   []*exec.Cmd
	Target Target
}

// StartServers runs nodes servers of binary, each on a free port, one after
// the other (the first creates the database schema), and waits until each
// is running: with a temporary data directory when postgresURL is "", else
// in PostgreSQL mode on that database. extra flags are appended.
func StartServers(binary, token string, nodes int, postgresURL string, extra ...string) (*Server, error) {
	args := []string{"run", "--http-enabled", "--https-enabled=false", "--http-port=0", "--log-level=warn"}
	if !slices.ContainsFunc(extra, func(f string) bool { return strings.HasPrefix(f, "--access-file=") }) {
		args = append(args, "--api-token="+token)
	}
	if postgresURL == "" {
		args = append(args, "--data-directory-temporary")
	} else {
		args = append(args, "--storage-backend=postgres", "--postgres-url="+postgresURL)
	}
	args = append(args, extra...)
	group := &Server{}
	var urls []string
	for i := 0; i < nodes; i++ {
		s, err := start(binary, args, "plain HTTP enabled", token)
		if err != nil {
			_ = group.Stop()
			return nil, fmt.Errorf("start the server: %w", err)
		}
		group.cmds = append(group.cmds, s.cmds...)
		urls = append(urls, s.Target.URL)
	}
	group.Target = NewTarget(token, urls...)
	return group, nil
}

// start runs binary with args and waits until it logs message with the
// port it listens on, as a JSON line on its standard output, and answers
// on that port. Its standard error goes to ours.
func start(binary string, args []string, message, token string) (*Server, error) {
	cmd := exec.Command(binary, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			var entry struct {
				Message string `json:"message"`
				Port    int    `json:"port"`
			}
			if json.Unmarshal(scanner.Bytes(), &entry) == nil && entry.Message == message {
				select {
				case found <- strconv.Itoa(entry.Port):
				default:
				}
			}
		}
	}()
	select {
	case port := <-found:
		s := &Server{cmds: []*exec.Cmd{cmd}, Target: Target{URL: "http://127.0.0.1:" + port, Token: token}}
		if err := s.waitReady(); err != nil {
			_ = s.Stop()
			return nil, err
		}
		return s, nil
	case <-ended:
		return nil, fmt.Errorf("%s %s ended before listening: %v", binary, args[0], cmd.Wait())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s %s did not listen within 30 s", binary, args[0])
	}
}

func (s *Server) waitReady() error {
	client := newClient(1)
	for i := 0; i < 300; i++ {
		resp, err := client.Get(s.Target.URL + "/api/v1/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("server not ready")
}

// Stop ends the processes with SIGTERM and waits for them.
func (s *Server) Stop() error {
	var errs []error
	for _, cmd := range s.cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range s.cmds {
		errs = append(errs, cmd.Wait())
	}
	return errors.Join(errs...)
}

// ResetPeak starts a new measurement of the peak resident set sizes.
func (s *Server) ResetPeak() error {
	var errs []error
	for _, cmd := range s.cmds {
		errs = append(errs, os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", cmd.Process.Pid), []byte("5"), 0))
	}
	return errors.Join(errs...)
}

// Usage is the resource use of the server's processes so far, added up.
type Usage struct {
	// CPU is user plus system time.
	CPU time.Duration
	// RSS and PeakRSS are the resident set size now and at its highest
	// since the start or the last ResetPeak, in bytes.
	RSS, PeakRSS int64
}

// Usage reads the resource use of the server's processes from /proc.
func (s *Server) Usage() (Usage, error) {
	var sum Usage
	for _, cmd := range s.cmds {
		u, err := processUsage(cmd.Process.Pid)
		if err != nil {
			return Usage{}, err
		}
		sum.CPU, sum.RSS, sum.PeakRSS = sum.CPU+u.CPU, sum.RSS+u.RSS, sum.PeakRSS+u.PeakRSS
	}
	return sum, nil
}

// processUsage reads the resource use of process pid from /proc.
func processUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// Fields after the command name (which is in parentheses): utime is the
	// 14th field of the line, stime the 15th, in clock ticks of 1/100 s.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	u := Usage{CPU: time.Duration(utime+stime) * 10 * time.Millisecond}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, value, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch key {
		case "VmRSS":
			u.RSS = kb << 10
		case "VmHWM":
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// Settle waits until the process uses less than idle of a core over a
// window (its compactions and flushes done), at most limit, and returns how
// long it waited; an error if it is still busy then.
func (s *Server) Settle(idle float64, window, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	before, err := s.Usage()
	if err != nil {
		return 0, err
	}
	for {
		time.Sleep(window)
		after, err := s.Usage()
		if err != nil {
			return time.Since(start), err
		}
		if used := (after.CPU - before.CPU).Seconds() / window.Seconds(); used < idle {
			return time.Since(start), nil
		} else if time.Since(start) >= limit {
			return time.Since(start), fmt.Errorf("still using %.0f%% of a core after %s", 100*used, limit.Round(time.Second))
		}
		before = after
	}
}
