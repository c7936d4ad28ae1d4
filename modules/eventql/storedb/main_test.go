package storedb_test

import (
	"os"
	"testing"

	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// pg is the PostgreSQL cluster of the tests that run on every backend.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
