package pgtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

func TestClusterLifecycle(t *testing.T) {
	if err := pgtest.Available(); err != nil {
		t.Skip(err)
	}
	c, err := pgtest.NewCluster(pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CreateDatabase(ctx, "lifecycle"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "lifecycle", "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "lifecycle", "SELECT x FROM t"); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if err := c.Stop(pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "lifecycle", "SELECT 1"); err == nil {
		t.Fatal("a stopped cluster answered")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	dir := c.DataDir()
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the data directory survived Remove: %v", err)
	}
}

func TestStandbyAndPromote(t *testing.T) {
	primary := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	if _, err := primary.CreateDatabase(ctx, "replicated"); err != nil {
		t.Fatal(err)
	}
	standby, err := primary.NewStandby()
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Remove()
	if err := primary.Exec(ctx, "replicated", "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := standby.Exec(ctx, "replicated", "INSERT INTO t VALUES (2)"); err == nil {
		t.Fatal("the standby accepted a write before its promotion")
	}
	if err := primary.Stop(pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(); err != nil {
		t.Fatal(err)
	}
	// The synchronously committed row is there, and the standby now writes.
	if err := standby.Exec(ctx, "replicated", "DO $$ BEGIN IF (SELECT count(*) FROM t) <> 1 THEN RAISE 'rows lost'; END IF; END $$; INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("after the promotion: %v", err)
	}
}

// TestPauseAndResume checks that a paused cluster answers nothing (a
// statement times out, its connection stays open) and answers again once
// resumed, and that Remove stops a paused cluster.
func TestPauseAndResume(t *testing.T) {
	if err := pgtest.Available(); err != nil {
		t.Skip(err)
	}
	c, err := pgtest.NewCluster(pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := conn.Ping(short); !pgconn.Timeout(err) {
		t.Fatalf("a paused cluster answered %v, want a timeout", err)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "postgres", "SELECT 1"); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Remove(); err != nil {
		t.Fatalf("Remove of a paused cluster: %v", err)
	}
	t.Logf("removed a paused cluster in %v", time.Since(start))
}
