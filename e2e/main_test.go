// Package e2e tests the real eventstore binary: built once, started on free
// ports, spoken to over real HTTP, stopped with real signals.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// bin is the eventstore binary built for this test run.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "eventstore-e2e-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, err = harness.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pg.Run(m) // removes the shared PostgreSQL cluster, if a test started it
	os.RemoveAll(dir)
	os.Exit(code)
}
