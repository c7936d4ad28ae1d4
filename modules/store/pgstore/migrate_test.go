package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestVersion1IsMigrated opens a database of schema version 1 (with the
// index by subject and type): the node migrates it to the current version,
// which has no such index, and the events of a subject with a type are
// found as before, by the subject's index.
func TestVersion1IsMigrated(t *testing.T) {
	url := pg.Database(t)
	s := node(t, url)
	for i, eventType := range []string{"io.example.a", "io.example.b", "io.example.a", "io.example.c"} {
		c := candidate("/migrated", fmt.Sprintf(`{"i":%d}`, i))
		c.Type = eventType
		if _, err := s.Write(context.Background(), []event.Candidate{c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Close(t, s)

	// Back to version 1, as a release of that version left it.
	database := databaseOf(url)
	if err := pg.Cluster(t).Exec(context.Background(), database, `CREATE INDEX events_subject_type ON eventstore.events (subject, type, id);
UPDATE eventstore.meta SET value = '1' WHERE key = 'version'`); err != nil {
		t.Fatal(err)
	}

	s = node(t, url)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var (
		version string
		index   bool
	)
	if err := conn.QueryRow(context.Background(), `SELECT value, to_regclass('eventstore.events_subject_type') IS NOT NULL
FROM eventstore.meta WHERE key = 'version'`).Scan(&version, &index); err != nil {
		t.Fatal(err)
	}
	if version != fmt.Sprint(pgstore.SchemaVersion) || index {
		t.Fatalf("after the migration: version %s, index by subject and type present: %v", version, index)
	}
	for eventType, want := range map[string]uint64{"io.example.a": 2, "io.example.b": 1, "io.example.c": 3} {
		id, found, err := s.LatestID("/migrated", eventType)
		if err != nil || !found || id != want {
			t.Errorf("latest %s of /migrated: %d, %v, %v; want %d", eventType, id, found, err, want)
		}
	}
	if _, found, err := s.LatestID("/migrated", "io.example.none"); err != nil || found {
		t.Errorf("latest of a type /migrated has no event of: found %v, %v", found, err)
	}
	storetest.Close(t, s)
	if n := verify(t, url); n != 4 {
		t.Fatalf("verify after the migration: %d events", n)
	}
}
