package e2e

import (
	"testing"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// pg is the PostgreSQL cluster of this test binary, started by the first
// test that asks for a database; each test gets a new database on it.
var pg pgtest.Shared

// starter starts the service for a test, each node with extra flags.
type starter func(t *testing.T, extra ...string) harness.Target

// eachTarget runs test as subtest pebble against one Pebble instance and as
// subtest postgres-3-nodes against three PostgreSQL-mode nodes on a new
// database, each request to a random node. The second skips when
// PostgreSQL is not installed.
func eachTarget(t *testing.T, test func(t *testing.T, start starter)) {
	t.Run("pebble", func(t *testing.T) { test(t, startPebble) })
	t.Run("postgres-3-nodes", func(t *testing.T) { test(t, startPostgres3) })
}

func startPebble(t *testing.T, extra ...string) harness.Target {
	t.Helper()
	return harness.Start(t, bin, harness.Dev(extra...)...)
}

func startPostgres3(t *testing.T, extra ...string) harness.Target {
	t.Helper()
	return startPostgres(t, 3, extra...)
}

// startPostgres starts nodes on a new database of the shared cluster.
func startPostgres(t *testing.T, nodes int, extra ...string) *harness.Cluster {
	t.Helper()
	return harness.StartCluster(t, bin, nodes, harness.Postgres(pg.Database(t), extra...)...)
}
