package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewStandby makes a streaming standby of the running cluster c: a base
// backup (pg_basebackup -R, as the replication connection of the superuser
// over 127.0.0.1, which initdb's pg_hba.conf trusts) into a new data
// directory, started on a free port; then c waits for it on every commit
// (synchronous_standby_names = '*', synchronous_commit on). It returns once
// the standby streams synchronously. The caller removes it with Remove.
func (c *Cluster) NewStandby() (*Cluster, error) {
	root, err := os.MkdirTemp("", "pgtest-standby-*")
	if err != nil {
		return nil, err
	}
	s := &Cluster{root: root}
	if err := s.replicate(c); err != nil {
		return nil, errors.Join(err, s.Remove())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'"); err != nil {
		return nil, errors.Join(err, s.Remove())
	}
	if err := c.Exec(ctx, "postgres", "SELECT pg_reload_conf()"); err != nil {
		return nil, errors.Join(err, s.Remove())
	}
	if err := c.waitForSyncStandby(ctx); err != nil {
		return nil, errors.Join(err, s.Remove())
	}
	return s, nil
}

// replicate fills s's data directory with a base backup of primary and
// starts it as a standby.
func (s *Cluster) replicate(primary *Cluster) error {
	if err := s.ownByPostgres(s.root); err != nil {
		return err
	}
	if out, err := s.command("pg_basebackup", "-D", s.DataDir(), "-h", "127.0.0.1", "-p", fmt.Sprint(primary.port),
		"-U", "postgres", "-R", "-X", "stream", "--checkpoint=fast", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_basebackup: %w: %s", err, out)
	}
	s.startWatchdog()
	// The copied postgresql.conf names the primary's port and socket
	// directory; later lines win.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if s.port, err = freePort(); err != nil {
			return err
		}
		conf := fmt.Sprintf("port = %d\nunix_socket_directories = '%s'\n", s.port, s.root)
		if err = appendFile(filepath.Join(s.DataDir(), "postgresql.conf"), conf); err != nil {
			return err
		}
		if err = s.Start(); err == nil {
			return nil
		}
	}
	return err
}

// waitForSyncStandby waits until a standby streams to c synchronously.
func (c *Cluster) waitForSyncStandby(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no synchronous standby: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Promote turns the standby into a primary (pg_ctl promote) and waits until
// it accepts writes.
func (c *Cluster) Promote() error {
	if out, err := c.command("pg_ctl", "-D", c.DataDir(), "-w", "-t", "60", "promote").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl promote: %w: %s", err, out)
	}
	return nil
}
