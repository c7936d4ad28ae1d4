package pgstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
)

func TestDescribeNamesTheDatabaseButNoPassword(t *testing.T) {
	// The cluster trusts local connections, so any password is accepted.
	url := strings.Replace(pg.Database(t), "postgres://postgres@", "postgres://postgres:S3cretPassw0rd@", 1)
	s := node(t, url)
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/a", `{}`)}, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Describe()
	engine, _ := d["engine"].(map[string]any)
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := engine["pool"].(map[string]any)
	if engine["backend"] != "postgres" || engine["database"] != cfg.Database || engine["schemaVersion"] != pgstore.SchemaVersion ||
		pool == nil || pool["acquires"].(int64) == 0 || d["events"] != uint64(1) {
		t.Fatalf("describe: %s", raw)
	}
	if cfg.Password != "S3cretPassw0rd" || strings.Contains(string(raw), cfg.Password) {
		t.Fatalf("describe shows the password: %s", raw)
	}
	var _ store.Describer = (*pgstore.Backend)(nil)
}
