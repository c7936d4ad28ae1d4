package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

func TestPostgresBackend(t *testing.T) {
	cluster := pgtest.New(t, pgtest.Options{})
	url, err := cluster.CreateDatabase(context.Background(), "storage")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{StorageBackend: config.BackendPostgres, PostgresURL: url + "&password=s3cret", PostgresMaxConnections: 5}
	p := NewPostgres(cfg, zap.NewNop())
	if p.ServiceID() != "" {
		t.Fatal("a service id before the database was opened")
	}
	reg := prometheus.NewRegistry()
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	b, err := p.Open()
	if err != nil {
		t.Fatal(err)
	}
	id := p.ServiceID()
	b.Close()
	again := NewPostgres(cfg, zap.NewNop())
	b, err = again.Open()
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if id == "" || again.ServiceID() != id {
		t.Fatalf("service ids %q and %q: the nodes of one database must share one", id, again.ServiceID())
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() == "eventstore_postgres_connections_max" {
			found = f.GetMetric()[0].GetGauge().GetValue() == 5
		}
	}
	if !found {
		t.Fatal("eventstore_postgres_connections_max is not 5")
	}
	if fields := p.Announce(); strings.Contains(zapString(fields), "s3cret") {
		t.Fatalf("the announcement shows the password: %v", fields)
	}

	// A database that cannot be reached: the error names hosts and
	// database, never the password.
	cluster.Stop(pgtest.Immediate)
	_, err = NewPostgres(cfg, zap.NewNop()).Open()
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "database storage on 127.0.0.1:") {
		t.Fatalf("open of a stopped database: %v", err)
	}
}

func zapString(fields []zap.Field) string {
	var out []string
	for _, f := range fields {
		out = append(out, f.Key+"="+f.String)
	}
	return strings.Join(out, " ")
}
