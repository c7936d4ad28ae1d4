package pgstore_test

import (
	"context"
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// pg is the cluster of the tests that need no cluster of their own.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// opener opens the backend of the database at url.
func opener(url string) store.Opener {
	return func() (store.Backend, error) {
		return pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{MaxConnections: 8})
	}
}

// node starts a store (a node) on the database at url.
func node(t testing.TB, url string) *store.Store {
	t.Helper()
	return storetest.Start(t, opener(url))
}

func candidate(subject string, data string) event.Candidate {
	return event.Candidate{Source: "https://pgstore.test", Subject: subject, Type: "io.example.pg", Data: []byte(data)}
}

// verify checks the whole database at url with store.Verify.
func verify(t testing.TB, url string) uint64 {
	t.Helper()
	n, err := verifyErr(t, url)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return n
}

// verifyErr checks the whole database at url with store.Verify and
// returns what it found.
func verifyErr(t testing.TB, url string) (uint64, error) {
	t.Helper()
	b, err := pgstore.Open(context.Background(), url, zap.NewNop(), pgstore.Options{Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return storetest.Verify(context.Background(), b)
}

// ownCluster starts a cluster of the test's own, for a test that stops or
// restarts it, and returns it with the URL of a new database on it.
func ownCluster(t testing.TB, database string) (*pgtest.Cluster, string) {
	t.Helper()
	cluster := pgtest.New(t, pgtest.Options{})
	url, err := cluster.CreateDatabase(context.Background(), database)
	if err != nil {
		t.Fatal(err)
	}
	return cluster, url
}
