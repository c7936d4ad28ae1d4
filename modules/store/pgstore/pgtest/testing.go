package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// New starts a cluster for one test and removes it when the test ends. It
// skips the test when PostgreSQL is not installed.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	c, err := NewCluster(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Remove(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Shared is one cluster for the tests of a test binary, started when a test
// first asks for it. Its zero value is ready; Close it from TestMain after
// the tests ran (the watchdog removes it anyway when the process ends).
type Shared struct {
	Options Options

	once      sync.Once
	cluster   *Cluster
	err       error
	databases atomic.Int64
}

// Cluster returns the shared cluster, starting it on the first call. It
// skips the test when PostgreSQL is not installed.
func (s *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	s.once.Do(func() { s.cluster, s.err = NewCluster(s.Options) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.cluster
}

// Database creates a new, empty database on the shared cluster and returns
// its URL.
func (s *Shared) Database(t testing.TB) string {
	t.Helper()
	c := s.Cluster(t)
	url, err := c.CreateDatabase(context.Background(), fmt.Sprintf("test%d", s.databases.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Run runs the tests of m and then removes the shared cluster: call it as
// os.Exit(shared.Run(m)) from TestMain.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Close removes the shared cluster if it was started.
func (s *Shared) Close() error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Remove()
}
