package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// BinDir holds the PostgreSQL 15 binaries of Debian's postgresql-15 package.
const BinDir = "/usr/lib/postgresql/15/bin"

// StopMode is a shutdown mode of pg_ctl stop.
type StopMode string

// Shutdown modes: Fast rolls back open transactions and stops cleanly;
// Immediate stops at once, like a crash (recovery runs at the next start).
const (
	Fast      StopMode = "fast"
	Immediate StopMode = "immediate"
)

// Options configure a cluster.
type Options struct {
	// Settings are added to postgresql.conf, e.g. {"fsync": "off"}; they
	// override the defaults (fsync on, max_connections 200).
	Settings map[string]string
}

// Cluster is a running (or stopped) throw-away PostgreSQL cluster.
type Cluster struct {
	root     string // temporary directory: data/, the socket, server.log
	port     int
	watchdog *exec.Cmd
}

// Available returns nil when clusters can be started here, else what is
// missing.
func Available() error {
	if _, err := os.Stat(filepath.Join(BinDir, "initdb")); err != nil {
		return fmt.Errorf("PostgreSQL 15 is not installed (no %s/initdb): apt-get install -y postgresql-15", BinDir)
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return fmt.Errorf("no postgres system user to run PostgreSQL as (it refuses root): %w", err)
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			return fmt.Errorf("runuser is missing: %w", err)
		}
	}
	return nil
}

// NewCluster creates and starts a cluster. The caller removes it with Remove.
func NewCluster(opts Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "pgtest-*")
	if err != nil {
		return nil, err
	}
	c := &Cluster{root: root}
	if err := c.create(opts); err != nil {
		return nil, errors.Join(err, c.Remove())
	}
	return c, nil
}

func (c *Cluster) create(opts Options) error {
	if err := c.ownByPostgres(c.root); err != nil {
		return err
	}
	if out, err := c.command("initdb", "-D", c.DataDir(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	c.startWatchdog()
	settings := map[string]string{
		"listen_addresses":        "'127.0.0.1'",
		"unix_socket_directories": "'" + c.root + "'",
		"fsync":                   "on",
		"max_connections":         "200",
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var conf strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&conf, "%s = %s\n", k, settings[k])
	}
	if err := appendFile(filepath.Join(c.DataDir(), "postgresql.conf"), conf.String()); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ { // another process may take the free port first
		if c.port, err = freePort(); err != nil {
			return err
		}
		if err = appendFile(filepath.Join(c.DataDir(), "postgresql.conf"), fmt.Sprintf("port = %d\n", c.port)); err != nil {
			return err
		}
		if err = c.Start(); err == nil {
			return nil
		}
	}
	return err
}

// DataDir returns the cluster's data directory.
func (c *Cluster) DataDir() string { return filepath.Join(c.root, "data") }

// Port returns the loopback port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// URL returns the connection URL of database as the superuser postgres.
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
}

// Start starts the stopped cluster and waits until it accepts connections.
func (c *Cluster) Start() error {
	if out, err := c.command("pg_ctl", "-D", c.DataDir(), "-l", c.logFile(), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, c.logTail())
	}
	return nil
}

// Stop stops the cluster in mode and waits until it is down.
func (c *Cluster) Stop(mode StopMode) error {
	if out, err := c.command("pg_ctl", "-D", c.DataDir(), "-m", string(mode), "-w", "-t", "60", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, out)
	}
	return nil
}

// Restart stops the cluster in mode and starts it again.
func (c *Cluster) Restart(mode StopMode) error {
	if err := c.Stop(mode); err != nil {
		return err
	}
	return c.Start()
}

// Remove stops the cluster at once, paused or not, and deletes its
// directory.
func (c *Cluster) Remove() error {
	var errs []error
	if _, err := os.Stat(filepath.Join(c.DataDir(), "postmaster.pid")); err == nil {
		_ = c.Resume() // a paused server cannot stop
		if out, err := c.command("pg_ctl", "-D", c.DataDir(), "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("pg_ctl stop: %w: %s", err, out))
		}
	}
	if c.watchdog != nil {
		_ = c.watchdog.Process.Kill()
		_ = c.watchdog.Wait()
		c.watchdog = nil
	}
	if err := os.RemoveAll(c.root); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Exec runs sql in database as the superuser.
func (c *Cluster) Exec(ctx context.Context, database, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// CreateDatabase creates an empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.URL(name), nil
}

// command returns the PostgreSQL binary name with args, run as the postgres
// user when this process is root.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	bin := filepath.Join(BinDir, name)
	if os.Geteuid() != 0 {
		return exec.Command(bin, args...)
	}
	return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
}

// ownByPostgres hands dir to the postgres user when this process is root.
func (c *Cluster) ownByPostgres(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// startWatchdog starts a process, in its own process group, that stops the
// cluster (continuing it first, should a test have paused it) and removes
// its directory once this process is gone.
func (c *Cluster) startWatchdog() {
	stop := c.command("pg_ctl", "-D", c.DataDir(), "-m", "immediate", "stop").Args
	quoted := make([]string, len(stop))
	for i, a := range stop {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	resume := fmt.Sprintf(`pm=$(head -n 1 '%s/data/postmaster.pid' 2>/dev/null) && [ -n "$pm" ] && kill -CONT $(cat /proc/$pm/task/*/children 2>/dev/null) $pm 2>/dev/null`, c.root)
	script := fmt.Sprintf("while [ -d /proc/%d ]; do sleep 1; done; %s; %s >/dev/null 2>&1; rm -rf '%s'",
		os.Getpid(), resume, strings.Join(quoted, " "), c.root)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() == nil {
		c.watchdog = cmd
	}
}

func (c *Cluster) logFile() string { return filepath.Join(c.root, "server.log") }

// logTail returns the end of the server log, for errors.
func (c *Cluster) logTail() string {
	raw, _ := os.ReadFile(c.logFile())
	if len(raw) > 2000 {
		raw = raw[len(raw)-2000:]
	}
	return string(raw)
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
