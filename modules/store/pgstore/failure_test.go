package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestDatabaseRestartUnderLoad restarts PostgreSQL (fast shutdown) while
// writers write: meanwhile writes fail with store.ErrUnavailable and
// nothing else (or wait while the outcome of a commit the shutdown broke is
// looked up), afterwards they succeed again without a restart of the store,
// and every acknowledged event is stored exactly once.
func TestDatabaseRestartUnderLoad(t *testing.T) {
	cluster, url := ownCluster(t, "restart")
	s := node(t, url)
	var (
		mu    sync.Mutex
		acked = map[uint64]string{}
	)
	stop := storetest.Loop(8, func(w, i int) bool {
		data := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
		records, err := s.Write(context.Background(), []event.Candidate{candidate(fmt.Sprintf("/load/%d", w), data)}, nil)
		switch {
		case err == nil:
			mu.Lock()
			acked[records[0].ID] = string(records[0].JSON)
			mu.Unlock()
		case errors.Is(err, store.ErrUnavailable):
			time.Sleep(10 * time.Millisecond)
		default:
			t.Errorf("write during the restart: %v", err)
			return false
		}
		return true
	})
	time.Sleep(300 * time.Millisecond)
	if err := cluster.Restart(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	waitForWrites(t, s, 100)
	stop()

	// While the database is down, a write answers ErrUnavailable; once it
	// is back, writes succeed again.
	if err := cluster.Stop(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/down", `{}`)}, nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a write while the database is down: %v", err)
	}
	t.Logf("a write while the database is down failed after %v", time.Since(start))
	if !s.Unreachable() || s.Writable() {
		t.Fatalf("while the database is down: unreachable %v, writable %v", s.Unreachable(), s.Writable())
	}
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	records, err := s.Write(context.Background(), []event.Candidate{candidate("/up", `{}`)}, nil)
	if err != nil {
		t.Fatalf("a write after the database is back: %v", err)
	}
	acked[records[0].ID] = string(records[0].JSON)
	if !s.Writable() || s.Failure() != nil {
		t.Fatalf("after the restart: writable %v, failure %v", s.Writable(), s.Failure())
	}
	n := verify(t, url)
	b, err := pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for id, json := range acked {
		r, found, err := b.Record(id)
		if err != nil || !found || string(r.JSON) != json {
			t.Fatalf("acknowledged event %d lost or changed (%d events stored): %v", id, n, err)
		}
	}
	if uint64(len(acked)) != n {
		t.Fatalf("%d writes acknowledged, %d events stored", len(acked), n)
	}
}

// waitForWrites waits until n more events are durable on s.
func waitForWrites(t *testing.T, s *store.Store, n uint64) {
	t.Helper()
	before := s.Durable()
	deadline := time.Now().Add(20 * time.Second)
	for s.Durable() < before+n {
		if time.Now().After(deadline) {
			t.Fatalf("writes did not recover after the restart: %d events, %d before", s.Durable(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewerSchemaVersionIsRefused(t *testing.T) {
	url := pg.Database(t)
	b, err := pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	newer := fmt.Sprint(pgstore.SchemaVersion + 1)
	if err := pg.Cluster(t).Exec(context.Background(), databaseOf(url), "UPDATE eventstore.meta SET value = '"+newer+"' WHERE key = 'version'"); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{})
	var version *pgstore.VersionError
	if !errors.As(err, &version) || version.Version != pgstore.SchemaVersion+1 {
		t.Fatalf("open of a newer schema: %v", err)
	}
	t.Log(err)
}

func TestFsyncOffIsRefused(t *testing.T) {
	cluster := pgtest.New(t, pgtest.Options{Settings: map[string]string{"fsync": "off"}})
	_, err := pgstore.Open(context.Background(), cluster.URL("postgres"), zap.NewNop(), pgstore.Options{})
	var setting *pgstore.SettingError
	if !errors.As(err, &setting) || setting.Setting != "fsync" {
		t.Fatalf("open on a server with fsync off: %v", err)
	}
	t.Log(err)
}

func TestBadURLIsNotQuoted(t *testing.T) {
	_, err := pgstore.Open(context.Background(), "postgres://user:s3cret@host:notaport/db", zap.NewNop(), pgstore.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("open with a malformed URL: %v", err)
	}
}

// databaseOf returns the database name at the end of a pgtest URL.
func databaseOf(url string) string {
	path := url[strings.LastIndex(url, "/")+1:]
	return path[:strings.Index(path, "?")]
}

func TestDescribeShowsNoPassword(t *testing.T) {
	hosts, database := pgstore.Describe("postgres://app:s3cret@db1:5432,db2:5433/events?target_session_attrs=read-write")
	if hosts != "db1:5432,db2:5433" || database != "events" {
		t.Fatalf("Describe: hosts %q, database %q", hosts, database)
	}
	if err := pgstore.CheckURL("postgres://app:s3cret@db1/events"); err != nil {
		t.Fatal(err)
	}
}

// TestReadsFailWithoutTheHead stops the database under a node that holds
// the newest events in memory: a read that must learn what other nodes
// committed fails with ErrUnavailable instead of answering from the node's
// own, possibly older, state; an observer's read up to the node's durable
// head goes on from memory.
func TestReadsFailWithoutTheHead(t *testing.T) {
	cluster, url := ownCluster(t, "readsfail")
	s := node(t, url)
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/reads", `{}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Start() })
	unavailable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s without the database: %v, want ErrUnavailable", what, err)
		}
	}
	_, err := s.Read(store.ReadOptions{Subject: "/reads"})
	unavailable("read", err)
	_, _, err = s.LatestID("/reads", "io.example.pg")
	unavailable("latest id", err)
	_, err = s.Current()
	unavailable("current view", err)
	it := s.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for it.Next() {
		t.Error("a scan to the end read an event without the database")
	}
	unavailable("scan to the end", it.Close())
	it = s.Scan(store.Scan{From: 0, To: 0}) // up to the durable head: an observer's
	if !it.Next() || it.Record().ID != 0 {
		t.Error("a scan up to the durable head found nothing")
	}
	if err := it.Close(); err != nil {
		t.Errorf("a scan up to the durable head: %v", err)
	}
}
