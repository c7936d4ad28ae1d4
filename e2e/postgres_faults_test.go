package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// unreachable is the answer to a data request while the database cannot be
// reached (docs/reference.md §9 point 7).
const unreachable = "503 service unavailable: storage unreachable"

// TestPostgresKillNineLoop writes on three nodes while one node after the
// other is killed with SIGKILL at a random moment and replaced; every
// acknowledged event must be stored byte for byte, no request's event
// twice, the log contiguous and chained, and verify clean.
func TestPostgresKillNineLoop(t *testing.T) {
	const iterations = 10
	url := pg.Database(t)
	cluster := harness.StartCluster(t, bin, 3, harness.Postgres(url)...)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	acked := map[string]string{}
	ws := startWriters(12, "/crash", func() string { return cluster.URL("http") }, acked)
	for i := 0; i < iterations; i++ {
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		victim := rng.IntN(3)
		node := cluster.Nodes()[victim]
		node.Signal(syscall.SIGKILL)
		node.Wait(10 * time.Second)
		cluster.Replace(victim)
	}
	time.Sleep(300 * time.Millisecond)
	ws.stop()
	for failure := range ws.failures {
		if failure != "transport error" { // a request to the killed node
			t.Errorf("a write failed with %s (%d times)", failure, ws.failures[failure])
		}
	}
	total := checkStore(t, cluster, acked)
	if total < len(acked) || len(acked) < iterations {
		t.Fatalf("%d events stored, %d acknowledged", total, len(acked))
	}
	checkNoDuplicates(t, cluster)
	verifyClean(t, total, "--postgres-url="+url)
	t.Logf("%d nodes killed, %d acknowledged events, %d stored, failures %v", iterations, len(acked), total, ws.failures)
}

// TestPostgresRestartUnderLoad stops PostgreSQL (fast shutdown) under
// writes on three nodes: meanwhile the nodes keep running, answer data
// requests 503 with Retry-After, health fail and ping 200; once PostgreSQL
// is back they serve again without a restart, with every acknowledged event
// stored once.
func TestPostgresRestartUnderLoad(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	url, err := db.CreateDatabase(context.Background(), "restart")
	if err != nil {
		t.Fatal(err)
	}
	cluster := harness.StartCluster(t, bin, 3, harness.Postgres(url)...)
	acked := map[string]string{}
	ws := startWriters(8, "/restart", func() string { return cluster.URL("http") }, acked)
	waitUntil(t, 10*time.Second, func() bool { return ws.acknowledged() > 100 })
	if err := db.Stop(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	for i, node := range cluster.Nodes() {
		waitUntil(t, 10*time.Second, func() bool { return healthStatus(t, node) == "fail" })
		for path, body := range map[string]string{
			"/api/v1/write-events":      candidates("/restart/probe", "io.example.x"),
			"/api/v1/read-events":       `{"subject":"/","options":{"recursive":true}}`,
			"/api/v1/observe-events":    `{"subject":"/","options":{"recursive":true}}`,
			"/api/v1/read-subjects":     `{"baseSubject":"/"}`,
			"/api/v1/read-event-types":  ``,
			"/api/v1/run-eventql-query": queryBody("FROM e IN events PROJECT INTO COUNT()"),
		} {
			r := node.Do("POST", path, harness.Token, body)
			checkError(t, r, 503, "service unavailable: storage unreachable")
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("node %d: %s without Retry-After", i, path)
			}
		}
		if r := node.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
			t.Fatalf("node %d: ping %d while the database is down", i, r.StatusCode)
		}
	}
	if err := db.Start(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	for _, node := range cluster.Nodes() {
		waitUntil(t, 15*time.Second, func() bool {
			return healthStatus(t, node) == "pass" && node.Do("POST", "/api/v1/write-events", harness.Token, candidates("/restart/after", "io.example.x")).StatusCode == 200
		})
	}
	t.Logf("every node wrote again %s after PostgreSQL was back", time.Since(up).Round(time.Millisecond))
	resumed := time.Now()
	waitUntil(t, 5*time.Second, func() bool { return ws.okSince(resumed) })
	ws.stop()
	checkAfterOutage(t, cluster, ws, acked, url)
}

// TestPostgresPausedWithSIGSTOP pauses every process of PostgreSQL with
// SIGSTOP under writes on two nodes: the database keeps its connections
// open and answers nothing, as behind a network that drops packets. Within
// 2 s of the pause health fails on every node; from then on a write, a read
// and a schema registration answer 503 with Retry-After within 2 s of being
// sent, and ping stays 200. After SIGCONT the nodes write again within
// seconds without a restart, with every acknowledged event stored once.
func TestPostgresPausedWithSIGSTOP(t *testing.T) {
	// Below the writers' client timeout of 10 s: a write caught in a commit
	// at the pause waits for its outcome, and must answer before it.
	const pauseFor = 8 * time.Second
	const within = 2 * time.Second
	db := pgtest.New(t, pgtest.Options{})
	url, err := db.CreateDatabase(context.Background(), "paused")
	if err != nil {
		t.Fatal(err)
	}
	cluster := harness.StartCluster(t, bin, 2, harness.Postgres(url)...)
	acked := map[string]string{}
	ws := startWriters(8, "/paused", func() string { return cluster.URL("http") }, acked)
	waitUntil(t, 10*time.Second, func() bool { return ws.acknowledged() > 100 })
	resume := sync.OnceFunc(func() {
		if err := db.Resume(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(resume) // also when the test fails
	if err := db.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	for i, node := range cluster.Nodes() {
		for healthStatus(t, node) != "fail" {
			if time.Since(paused) > within {
				t.Fatalf("node %d: health does not fail %v after the pause", i, time.Since(paused))
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("node %d: health fails %v after the pause", i, time.Since(paused).Round(time.Millisecond))
	}
	for round := 0; time.Since(paused) < pauseFor; round++ {
		for i, node := range cluster.Nodes() {
			checkRefusedFast(t, i, node, within, round)
		}
		time.Sleep(time.Second)
	}
	resume()
	up := time.Now()
	for _, node := range cluster.Nodes() {
		waitUntil(t, 10*time.Second, func() bool {
			return healthStatus(t, node) == "pass" && node.Do("POST", "/api/v1/write-events", harness.Token, candidates("/paused/after", "io.example.x")).StatusCode == 200
		})
	}
	t.Logf("every node wrote again %s after SIGCONT", time.Since(up).Round(time.Millisecond))
	resumed := time.Now()
	waitUntil(t, 5*time.Second, func() bool { return ws.okSince(resumed) })
	ws.stop()
	checkAfterOutage(t, cluster, ws, acked, url)
	for i, node := range cluster.Nodes() {
		lookups := len(node.Logs("connection lost during a commit, looking up its outcome"))
		ended := len(node.Logs("looked up the outcome of a commit: committed")) + len(node.Logs("looked up the outcome of a commit: not committed, nothing stored"))
		if lookups != ended || len(node.Logs("the database does not answer, refusing requests until it does")) == 0 || len(node.Logs("the database answers again")) == 0 {
			t.Fatalf("node %d: %d lookups of a commit's outcome started, %d ended; logs:\n%s", i, lookups, ended, node.Stdout())
		}
		t.Logf("node %d: the outcome of %d commits caught by the pause looked up", i, lookups)
	}
}

// checkRefusedFast checks that node refuses a write, a read and a schema
// registration with 503 storage unreachable and Retry-After, each within
// within, that its health fails with 503 and that ping answers 200.
func checkRefusedFast(t *testing.T, i int, node *harness.Instance, within time.Duration, round int) {
	t.Helper()
	for path, body := range map[string]string{
		"/api/v1/write-events":          candidates(fmt.Sprintf("/paused/probe/%d/%d", i, round), "io.example.x"),
		"/api/v1/read-events":           `{"subject":"/","options":{"recursive":true}}`,
		"/api/v1/register-event-schema": fmt.Sprintf(`{"eventType":"io.example.paused%d","schema":{"type":"object","properties":{}}}`, round),
	} {
		sent := time.Now()
		r := node.Do("POST", path, harness.Token, body)
		if took := time.Since(sent); took > within {
			t.Fatalf("node %d: %s answered after %v while the database is paused, want within %v", i, path, took, within)
		}
		checkError(t, r, 503, "service unavailable: storage unreachable")
		if r.Header.Get("Retry-After") == "" {
			t.Fatalf("node %d: %s without Retry-After", i, path)
		}
	}
	if r := node.Do("GET", "/api/v1/health", harness.Token, ""); r.StatusCode != 503 {
		t.Fatalf("node %d: health %d while the database is paused", i, r.StatusCode)
	}
	if r := node.Do("GET", "/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("node %d: ping %d while the database is paused", i, r.StatusCode)
	}
}

// checkAfterOutage checks, once the writers stopped, that every failed
// write was refused as unreachable (never a 500 or a broken connection),
// that every acknowledged event is stored byte for byte and none twice,
// and that verify finds the database at url clean.
func checkAfterOutage(t *testing.T, target harness.Target, ws *writers, acked map[string]string, url string) {
	t.Helper()
	for _, node := range target.Nodes() {
		if node.Exited() {
			t.Fatal("a node exited during the outage")
		}
	}
	for failure, n := range ws.failures {
		if failure != unreachable {
			t.Errorf("%d writes failed with %s", n, failure)
		}
	}
	total := checkStore(t, target, acked)
	if total < len(acked) {
		t.Fatalf("%d events stored, %d acknowledged", total, len(acked))
	}
	checkNoDuplicates(t, target)
	verifyClean(t, total, "--postgres-url="+url)
	t.Logf("%d events acknowledged, %d stored; refused writes: %v", len(acked), total, ws.failures)
}

// healthStatus returns the status of a node's health report.
func healthStatus(t *testing.T, node *harness.Instance) string {
	t.Helper()
	var report struct{ Status string }
	r := node.Do("GET", "/api/v1/health", harness.Token, "")
	if err := json.Unmarshal(r.Body, &report); err != nil {
		t.Fatalf("health: %d %s", r.StatusCode, r.Body)
	}
	return report.Status
}

// TestPostgresFailover runs three nodes on a primary with a synchronous
// streaming standby, through a URL that names both with
// target_session_attrs=read-write; the primary stops at once under writes
// and the standby is promoted: the nodes write again within seconds without
// a restart, and every acknowledged event is on the promoted standby.
func TestPostgresFailover(t *testing.T) {
	primary, standby, url := startFailoverPair(t)
	cluster := harness.StartCluster(t, bin, 3, harness.Postgres(url)...)
	acked := map[string]string{}
	ws := startWriters(8, "/failover", func() string { return cluster.URL("http") }, acked)
	waitUntil(t, 10*time.Second, func() bool { return ws.acknowledged() > 200 })
	if err := primary.Stop(pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the nodes find the primary gone
	if err := standby.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	for _, node := range cluster.Nodes() {
		waitUntil(t, 15*time.Second, func() bool {
			return node.Do("POST", "/api/v1/write-events", harness.Token, candidates("/failover/after", "io.example.x")).StatusCode == 200
		})
	}
	t.Logf("every node wrote again %s after the promotion", time.Since(promoted).Round(time.Millisecond))
	resumed := time.Now()
	waitUntil(t, 5*time.Second, func() bool { return ws.okSince(resumed) })
	ws.stop()
	checkAfterOutage(t, cluster, ws, acked, standby.URL("failover"))
}

// startFailoverPair starts a primary with the database "failover" and its
// synchronous standby, removed when the test ends, and returns them with
// the URL that names both hosts and follows a failover.
func startFailoverPair(t *testing.T) (primary, standby *pgtest.Cluster, url string) {
	t.Helper()
	primary = pgtest.New(t, pgtest.Options{})
	if _, err := primary.CreateDatabase(context.Background(), "failover"); err != nil {
		t.Fatal(err)
	}
	standby, err := primary.NewStandby()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := standby.Remove(); err != nil {
			t.Error(err)
		}
	})
	url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/failover?sslmode=disable&target_session_attrs=read-write", primary.Port(), standby.Port())
	return primary, standby, url
}
