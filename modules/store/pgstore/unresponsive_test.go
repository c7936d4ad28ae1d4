package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// detectWithin is how soon after the database stops answering a commit
// must fail with store.ErrUnavailable (probeInterval + probeTimeout, with
// room for a busy machine).
const detectWithin = 2 * time.Second

// TestUnansweringDatabase pauses every process of the database with
// SIGSTOP, which keeps the connections open but answers nothing: a commit
// fails with store.ErrUnavailable within detectWithin, writes are refused
// at once and the store reports itself unreachable meanwhile, a commit
// caught in the middle is looked up (logged once), and after SIGCONT the
// store writes again by itself, with every acknowledged event stored once.
func TestUnansweringDatabase(t *testing.T) {
	cluster := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	// resumer returns the function that resumes the cluster, which runs
	// when the test ends, also when it fails.
	resumer := func(t *testing.T) func() {
		resume := sync.OnceFunc(func() {
			if err := cluster.Resume(); err != nil {
				t.Error(err)
			}
		})
		t.Cleanup(resume)
		return resume
	}
	open := func(t *testing.T, name string) (*Backend, *store.Store, *observer.ObservedLogs) {
		url, err := cluster.CreateDatabase(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zap.InfoLevel)
		b, s := startOn(t, url, zap.New(core), Options{MaxConnections: 8})
		return b, s, logs
	}
	write := func(s *store.Store, subject string) ([]event.Record, error) {
		return s.Write(ctx, []event.Candidate{{Source: "https://pgstore.test", Subject: subject, Type: "io.example.pg", Data: []byte(`{}`)}}, nil)
	}

	t.Run("under writes", func(t *testing.T) {
		b, s, logs := open(t, "paused")
		acked := newAcked()
		stop := writeLoop(4, func(w, i int) bool {
			records, err := write(s, fmt.Sprintf("/load/%d", w))
			switch {
			case err == nil:
				acked.add(records)
			case errors.Is(err, store.ErrUnavailable):
				time.Sleep(10 * time.Millisecond)
			default:
				t.Errorf("a write while the database is paused: %v", err)
				return false
			}
			return true
		})
		defer stop()
		waitFor(t, 10*time.Second, "writes before the pause", func() bool { return acked.len() > 50 })

		resume := resumer(t)
		if err := cluster.Pause(); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		if tx, err := b.Begin(ctx, 0); !errors.Is(err, store.ErrUnavailable) {
			if err == nil {
				tx.Rollback()
			}
			t.Fatalf("a commit begun while the database is paused: %v, want store.ErrUnavailable", err)
		}
		detected := time.Since(paused)
		t.Logf("a commit failed %v after the pause", detected)
		if detected > detectWithin {
			t.Errorf("a commit failed %v after the pause, want within %v", detected, detectWithin)
		}
		if !b.Waiting() || !s.Unreachable() || s.Writable() {
			t.Fatalf("while paused: waiting %v, unreachable %v, writable %v", b.Waiting(), s.Unreachable(), s.Writable())
		}
		start := time.Now()
		if _, err := write(s, "/refused"); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a write while paused: %v, want store.ErrUnavailable", err)
		}
		if _, err := b.Head(); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("the head while paused: %v, want store.ErrUnavailable", err)
		}
		if _, _, err := b.Record(0); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a read while paused: %v, want store.ErrUnavailable", err)
		}
		if took := time.Since(start); took > detectWithin {
			t.Errorf("a write, the head and a read took %v while paused, want each refused at once", took)
		}
		time.Sleep(time.Second) // lookups of a commit caught by the pause retry meanwhile
		if !b.Waiting() || b.Describe()["answering"] != false {
			t.Fatal("the backend stopped waiting while the database is paused")
		}

		resume()
		resumed := time.Now()
		waitFor(t, 10*time.Second, "a write after the database answers again", func() bool {
			records, err := write(s, "/after")
			if err == nil {
				acked.add(records)
			}
			return err == nil
		})
		t.Logf("wrote again %v after SIGCONT", time.Since(resumed))
		stop()
		if b.Waiting() || !s.Writable() || s.Failure() != nil {
			t.Fatalf("after SIGCONT: waiting %v, writable %v, failure %v", b.Waiting(), s.Writable(), s.Failure())
		}
		acked.check(t, b)
		checkLogs(t, logs, b)
		if n := logs.FilterMessage("the database does not answer, refusing requests until it does").Len(); n != 1 {
			t.Errorf("logged %d times that the database does not answer, want 1", n)
		}
		if n := logs.FilterMessage("the database answers again").Len(); n != 1 {
			t.Errorf("logged %d times that the database answers again, want 1", n)
		}
	})

	t.Run("during a commit", func(t *testing.T) {
		b, s, logs := open(t, "pausedcommit")
		resume := resumer(t)
		var once sync.Once
		paused := make(chan error, 1)
		b.commitHook = func(phase string, _ *pgconn.PgConn) {
			if phase == "send" {
				once.Do(func() { paused <- cluster.Pause() })
			}
		}
		written := make(chan error, 1)
		go func() {
			_, err := write(s, "/caught")
			written <- err
		}()
		if err := <-paused; err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		// A write queued behind the caught commit, before the pause is
		// noticed: it is refused once it is, not held until the database
		// answers.
		queued := make(chan error, 1)
		go func() {
			_, err := write(s, "/queued")
			queued <- err
		}()
		waitFor(t, detectWithin, "the backend to wait", b.Waiting)
		t.Logf("waiting %v after the pause", time.Since(at))
		select {
		case err := <-queued:
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("a write queued behind the caught commit: %v, want store.ErrUnavailable", err)
			}
			t.Logf("the queued write refused %v after the pause", time.Since(at))
		case <-time.After(time.Second):
			t.Fatal("a write queued behind the caught commit waits for the paused database")
		}
		if _, err := write(s, "/refused"); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a write while a commit waits for the paused database: %v, want store.ErrUnavailable", err)
		}
		time.Sleep(1500 * time.Millisecond) // the lookup tries again meanwhile
		select {
		case err := <-written:
			t.Fatalf("the write caught by the pause answered %v before the database did", err)
		default:
		}
		resume()
		select {
		case err := <-written:
			if err != nil {
				t.Fatalf("the write caught by the pause: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the write caught by the pause did not answer after SIGCONT")
		}
		if n := count(t, b, "/queued"); n != 0 {
			t.Fatalf("%d events of the refused queued write stored", n)
		}
		if n := count(t, b, "/caught"); n != 1 || b.Stats().Resolved != 1 {
			t.Fatalf("%d events of the caught write stored, %d outcomes looked up; want 1 and 1", n, b.Stats().Resolved)
		}
		checkLogs(t, logs, b)
	})
}

// checkLogs checks that every lookup of a commit's outcome was logged
// once when it started and once when it ended.
func checkLogs(t *testing.T, logs *observer.ObservedLogs, b *Backend) {
	t.Helper()
	started := logs.FilterMessage("connection lost during a commit, looking up its outcome").Len()
	ended := logs.FilterMessageSnippet("the outcome of a commit").Len()
	if resolved := int(b.Stats().Resolved); started != resolved || ended != resolved {
		t.Errorf("%d lookups of a commit's outcome, logged %d times as started and %d times as ended", resolved, started, ended)
	}
	t.Logf("%d lookups of a commit's outcome", started)
}

// count returns the number of events of subject in b's database.
func count(t *testing.T, b *Backend, subject string) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM eventstore.events WHERE subject = $1", subject).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// acked collects acknowledged events from several writers.
type acked struct {
	mu     sync.Mutex
	events map[uint64]string
}

func newAcked() *acked { return &acked{events: map[uint64]string{}} }

func (a *acked) add(records []event.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range records {
		a.events[r.ID] = string(r.JSON)
	}
}

func (a *acked) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.events)
}

// check fails unless b's database holds every acknowledged event byte for
// byte and no other.
func (a *acked) check(t *testing.T, b *Backend) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, json := range a.events {
		r, found, err := b.Record(id)
		if err != nil || !found || string(r.JSON) != json {
			t.Fatalf("acknowledged event %d lost or changed: %v", id, err)
		}
	}
	head, err := b.Head()
	if err != nil {
		t.Fatal(err)
	}
	if head.Count != uint64(len(a.events)) {
		t.Fatalf("%d events acknowledged, %d stored", len(a.events), head.Count)
	}
}

// writeLoop runs fn(w, i) for i = 0, 1, … in n goroutines until stop, or
// until fn returns false; stop waits for them (and may be called again).
// It is storetest.Loop, which this test of the package itself cannot
// import: storetest imports pgstore.
func writeLoop(n int, fn func(w, i int) bool) (stop func()) {
	var wg sync.WaitGroup
	stopped := make(chan struct{})
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopped:
					return
				default:
				}
				if !fn(w, i) {
					return
				}
			}
		}()
	}
	return sync.OnceFunc(func() {
		close(stopped)
		wg.Wait()
	})
}

// waitFor fails the test unless cond holds within d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDescribeListsEachHostOnce checks the hosts that diagnostics show:
// pgx lists a host twice when it tries TLS first (sslmode=prefer, the
// default); diagnostics name it once.
func TestDescribeListsEachHostOnce(t *testing.T) {
	for url, want := range map[string]string{
		"postgres://app:s3cret@db1:5432/events":                                     "[db1:5432]",
		"postgres://app@db1/events?sslmode=disable":                                 "[db1:5432]",
		"postgres://app@db1:5432,db2:5433/events?target_session_attrs=read-write":   "[db1:5432 db2:5433]",
		"postgres://app@db1:5432,db2:5433/events?sslmode=require&connect_timeout=2": "[db1:5432 db2:5433]",
		"postgres://app@[2001:db8::1]:5432,db2:5433/events":                         "[[2001:db8::1]:5432 db2:5433]",
	} {
		pool, err := pgxpool.New(context.Background(), url) // connects only when asked to
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		b := &Backend{pool: pool, live: newLiveness()}
		if got := fmt.Sprint(b.Describe()["hosts"]); got != want {
			t.Errorf("%s: hosts %s, want %s", url, got, want)
		}
		pool.Close()
	}
}
