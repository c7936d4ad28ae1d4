package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// TestSessionsAndCommitOutcomes checks, on a cluster of its own, that
// sessions commit with synchronous_commit on whatever the database's
// default, and that a commit whose connection breaks is answered by its
// real outcome: nil when it committed, a retry when it did not.
func TestSessionsAndCommitOutcomes(t *testing.T) {
	cluster := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	database := 0
	open := func(t *testing.T) (*Backend, *store.Store, string) {
		database++
		name := fmt.Sprint("outcome", database)
		url, err := cluster.CreateDatabase(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cluster.Exec(ctx, name, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
			t.Fatal(err)
		}
		b, s := startOn(t, url, zap.NewNop(), Options{MaxConnections: 4})
		return b, s, name
	}
	// writeN writes n events on subject in one request; from copyMin on,
	// the commit copies them.
	writeN := func(s *store.Store, subject string, n int) ([]event.Record, error) {
		candidates := make([]event.Candidate, n)
		for i := range candidates {
			candidates[i] = event.Candidate{Source: "https://pgstore.test", Subject: subject, Type: "io.example.pg", Data: []byte(`{}`)}
		}
		return s.Write(ctx, candidates, nil)
	}
	write := func(s *store.Store, subject string) ([]event.Record, error) { return writeN(s, subject, 1) }
	count := func(t *testing.T, name, subject string) int {
		conn, err := pgx.Connect(ctx, cluster.URL(name))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM eventstore.events WHERE subject = $1", subject).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// onceAt runs f once, at the first commit's phase of b.
	onceAt := func(b *Backend, phase string, f func(conn *pgconn.PgConn)) {
		var once sync.Once
		b.commitHook = func(p string, conn *pgconn.PgConn) {
			if p == phase {
				once.Do(func() { f(conn) })
			}
		}
	}

	t.Run("synchronous_commit", func(t *testing.T) {
		b, _, _ := open(t)
		var setting string
		if err := b.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil {
			t.Fatal(err)
		}
		if setting != "on" {
			t.Fatalf("a session of the pool has synchronous_commit = %s, want on", setting)
		}
	})

	for _, n := range []int{1, copyMin} { // inserted, copied
		t.Run(fmt.Sprintf("%d committed before the connection broke", n), func(t *testing.T) {
			b, s, name := open(t)
			onceAt(b, "sent", func(conn *pgconn.PgConn) {
				// Wait until the commit is visible, then break the
				// connection before its answer is read.
				deadline := time.Now().Add(10 * time.Second)
				for count(t, name, "/committed") < n && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				conn.Conn().Close()
			})
			records, err := writeN(s, "/committed", n)
			if err != nil {
				t.Fatalf("a write that committed: %v", err)
			}
			if stored := count(t, name, "/committed"); stored != n || records[0].ID != 0 || b.Stats().Resolved != 1 {
				t.Fatalf("%d events stored, id %d, %d outcomes resolved; want %d, 0, 1", stored, records[0].ID, b.Stats().Resolved, n)
			}
			if _, err := write(s, "/after"); err != nil {
				t.Fatal(err)
			}
		})

		t.Run(fmt.Sprintf("%d not committed", n), func(t *testing.T) {
			b, s, name := open(t)
			onceAt(b, "send", func(conn *pgconn.PgConn) {
				// The server ends the session before the commit is sent.
				if err := cluster.Exec(ctx, "postgres", fmt.Sprintf("SELECT pg_terminate_backend(%d, 10000)", conn.PID())); err != nil {
					t.Error(err)
				}
			})
			if _, err := writeN(s, "/retried", n); err != nil {
				t.Fatalf("a write whose first commit failed: %v", err)
			}
			if stored := count(t, name, "/retried"); stored != n || b.Stats().CommitRetries == 0 {
				t.Fatalf("%d events stored after %d retries, want %d after at least 1", stored, b.Stats().CommitRetries, n)
			}
		})
	}

	// A commit without events is found by its marker in commit_markers;
	// its record of feature state may be changed again later, so it cannot
	// be the marker. Committed: the change is there once; not committed:
	// the commit is tried again and the fence still holds.
	stateOf := func(t *testing.T, name string) (value string, version int64) {
		conn, err := pgx.Connect(ctx, cluster.URL(name))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT convert_from(value, 'UTF8'), version FROM eventstore.state WHERE space = 'test' AND key = 'k'").Scan(&value, &version); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return value, version
	}
	put := func(s *store.Store) error {
		_, err := s.Commit(ctx, store.Request{Changes: []store.Change{{Space: "test", Key: "k", Value: []byte("v"), Expect: 0}}})
		return err
	}
	t.Run("a change of state committed before the connection broke", func(t *testing.T) {
		b, s, name := open(t)
		onceAt(b, "sent", func(conn *pgconn.PgConn) {
			deadline := time.Now().Add(10 * time.Second)
			for v, _ := stateOf(t, name); v == "" && time.Now().Before(deadline); v, _ = stateOf(t, name) {
				time.Sleep(10 * time.Millisecond)
			}
			conn.Conn().Close()
		})
		if err := put(s); err != nil {
			t.Fatalf("a change that committed: %v", err)
		}
		if v, version := stateOf(t, name); v != "v" || version != 1 || b.Stats().Resolved != 1 {
			t.Fatalf("state %q version %d, %d outcomes resolved; want v, 1, 1", v, version, b.Stats().Resolved)
		}
	})
	t.Run("a change of state not committed", func(t *testing.T) {
		b, s, name := open(t)
		onceAt(b, "send", func(conn *pgconn.PgConn) {
			if err := cluster.Exec(ctx, "postgres", fmt.Sprintf("SELECT pg_terminate_backend(%d, 10000)", conn.PID())); err != nil {
				t.Error(err)
			}
		})
		if err := put(s); err != nil {
			t.Fatalf("a change whose first commit failed: %v", err)
		}
		if v, _ := stateOf(t, name); v != "v" || b.Stats().CommitRetries == 0 {
			t.Fatalf("state %q after %d retries", v, b.Stats().CommitRetries)
		}
	})

	// Last, as it stops the cluster: a commit whose outcome cannot be
	// looked up stops the store; it is never tried again, which could store
	// it twice.
	t.Run("outcome unknown", func(t *testing.T) {
		b, s, _ := open(t)
		b.resolveTimeout = 3 * time.Second
		onceAt(b, "sent", func(conn *pgconn.PgConn) {
			if err := cluster.Stop(pgtest.Immediate); err != nil {
				t.Error(err)
			}
			conn.Conn().Close()
		})
		written := make(chan error, 1)
		go func() {
			_, err := write(s, "/unknown")
			written <- err
		}()
		// While the outcome is looked up, the store tells that the database
		// is unreachable (health fails, reads answer 503).
		deadline := time.Now().Add(b.resolveTimeout)
		for !s.Unreachable() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !s.Unreachable() || s.Writable() {
			t.Error("the store did not tell that the database is unreachable while it looked up the outcome")
		}
		if _, err := write(s, "/meanwhile"); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a write while the outcome is looked up: %v, want it refused at once as unavailable", err)
		}
		err := <-written
		if !errors.Is(err, store.ErrStorageFailure) || errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a write whose outcome is unknown: %v, want the storage failure", err)
		}
		if err := cluster.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := write(s, "/later"); !errors.Is(err, store.ErrStorageFailure) {
			t.Fatalf("a write after the unknown outcome: %v, want the store stopped", err)
		}
	})
}
