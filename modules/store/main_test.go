package store_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// pg is the PostgreSQL cluster of the tests that run on every backend.
var pg pgtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pg.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
