package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestVersion1IsMigrated opens a database of schema version 1 (events
// indexed by subject, by type and by both): the node migrates it to the
// current version, whose runs of subjects and types replace the indexes,
// and the events of a subject, of a type and of both are found as before.
func TestVersion1IsMigrated(t *testing.T) {
	url := pg.Database(t)
	s := node(t, url)
	types := []string{"io.example.a", "io.example.b", "io.example.a", "io.example.a", "io.example.c"}
	for i, eventType := range types {
		batch := []event.Candidate{candidate("/migrated", fmt.Sprintf(`{"i":%d}`, i)), candidate("/migrated", `{}`), candidate("/other", `{}`)}
		for j := range batch {
			batch[j].Type = eventType
		}
		if _, err := s.Write(context.Background(), batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Close(t, s)

	// Back to version 1, as a release of that version left it.
	database := databaseOf(url)
	if err := pg.Cluster(t).Exec(context.Background(), database, backToVersion3+`DROP TABLE eventstore.subject_runs, eventstore.type_runs;
CREATE INDEX events_subject ON eventstore.events (subject, id);
CREATE INDEX events_type ON eventstore.events (type, id);
CREATE INDEX events_subject_type ON eventstore.events (subject, type, id);
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
		version                        string
		indexes, subjectRuns, typeRuns int
	)
	if err := conn.QueryRow(context.Background(), `SELECT value,
	(SELECT count(*) FROM pg_indexes WHERE schemaname = 'eventstore' AND tablename = 'events'),
	(SELECT count(*) FROM eventstore.subject_runs), (SELECT count(*) FROM eventstore.type_runs)
FROM eventstore.meta WHERE key = 'version'`).Scan(&version, &indexes, &subjectRuns, &typeRuns); err != nil {
		t.Fatal(err)
	}
	// Runs: /migrated and /other alternate, five each; the types a, b, a a, c.
	if version != fmt.Sprint(pgstore.SchemaVersion) || indexes != 1 || subjectRuns != 10 || typeRuns != 4 {
		t.Fatalf("after the migration: version %s, %d indexes of events (want the primary key alone), %d runs of subjects (want 10), %d of types (want 4)",
			version, indexes, subjectRuns, typeRuns)
	}
	for eventType, want := range map[string]uint64{"io.example.a": 10, "io.example.b": 4, "io.example.c": 13} {
		id, found, err := s.LatestID("/migrated", eventType)
		if err != nil || !found || id != want {
			t.Errorf("latest %s of /migrated: %d, %v, %v; want %d", eventType, id, found, err, want)
		}
	}
	if _, found, err := s.LatestID("/migrated", "io.example.none"); err != nil || found {
		t.Errorf("latest of a type /migrated has no event of: found %v, %v", found, err)
	}
	for _, c := range []struct {
		scan store.Scan
		want []uint64
	}{
		{store.Scan{Subject: "/other", To: math.MaxUint64}, []uint64{2, 5, 8, 11, 14}},
		{store.Scan{Type: "io.example.a", To: math.MaxUint64}, []uint64{0, 1, 2, 6, 7, 8, 9, 10, 11}},
		{store.Scan{Subject: "/migrated", Type: "io.example.a", From: 1, To: 9, Descending: true}, []uint64{9, 7, 6, 1}},
	} {
		records, err := scanAll(s, c.scan)
		if got := ids(records); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("scan %+v: %v, %v; want %v", c.scan, got, err, c.want)
		}
	}
	storetest.Close(t, s)
	if n := verify(t, url); n != 15 {
		t.Fatalf("verify after the migration: %d events", n)
	}
}

// backToVersion5 turns a database of version 6 into one of version 5 as a
// release of that version left it: no kept digests of erased data, no
// commit numbers of the keys of data indexes.
const backToVersion5 = `
DROP TABLE eventstore.erased;
ALTER TABLE eventstore.data_keys DROP COLUMN commit_no;
UPDATE eventstore.meta SET value = '5' WHERE key = 'version';
`

// backToVersion4 turns a database of version 6 into one of version 4 as a
// release of that version left it: no keys of data indexes.
const backToVersion4 = backToVersion5 + `
DROP TABLE eventstore.data_keys;
UPDATE eventstore.meta SET value = '4' WHERE key = 'version';
`

// backToVersion3 turns a database of version 6 into one of version 3 as a
// release of that version left it: the schemas in a table of their own
// (in the order of the versions of their records), the head counting them.
const backToVersion3 = backToVersion4 + `
CREATE TABLE eventstore.schemas (
	event_type text COLLATE "C" PRIMARY KEY,
	raw bytea NOT NULL,
	commits bigint NOT NULL,
	position bigint GENERATED ALWAYS AS IDENTITY
);
INSERT INTO eventstore.schemas (event_type, raw, commits)
SELECT key, value, 1 FROM eventstore.state WHERE space = 'schema' ORDER BY version;
DROP TABLE eventstore.state, eventstore.commit_markers;
ALTER TABLE eventstore.head RENAME COLUMN state_count TO schema_count;
UPDATE eventstore.head SET schema_count = (SELECT count(*) FROM eventstore.schemas);
UPDATE eventstore.meta SET value = '3' WHERE key = 'version';
`

// TestVersion3IsMigrated opens a database of schema version 3, whose
// schemas had a table of their own: the node migrates them into feature
// state, in registration order, and enforces them.
func TestVersion3IsMigrated(t *testing.T) {
	url := pg.Database(t)
	s := node(t, url)
	for _, eventType := range []string{"io.example.z", "io.example.a"} {
		if err := s.RegisterSchema(context.Background(), eventType, mustSchema(t, `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`)); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Close(t, s)
	if err := pg.Cluster(t).Exec(context.Background(), databaseOf(url), backToVersion3); err != nil {
		t.Fatal(err)
	}

	s = node(t, url)
	var types []string
	for _, sw := range s.View().Schemas() {
		types = append(types, sw.Type)
	}
	if want := []string{"io.example.z", "io.example.a"}; !slices.Equal(types, want) {
		t.Fatalf("schemas after the migration: %v, want %v", types, want)
	}
	var conflict *store.CandidateConflictError
	if _, err := s.Write(context.Background(), []event.Candidate{{Source: "https://example.com", Subject: "/a", Type: "io.example.a", Data: []byte(`{}`)}}, nil); !errors.As(err, &conflict) {
		t.Fatalf("write that breaks a migrated schema: %v", err)
	}
	if err := s.RegisterSchema(context.Background(), "io.example.a", mustSchema(t, `{"type":"object","properties":{}}`)); !errors.Is(err, store.ErrSchemaExists) {
		t.Fatalf("second registration after the migration: %v", err)
	}
	if r, found, err := s.State(store.SchemaSpace, "io.example.a"); err != nil || !found || r.Version != 2 {
		t.Fatalf("state of a migrated schema: %+v %v %v", r, found, err)
	}
	storetest.Close(t, s)
	if n := verify(t, url); n != 0 {
		t.Fatalf("verify after the migration: %d events", n)
	}
}

func mustSchema(t *testing.T, raw string) *schema.Schema {
	t.Helper()
	sch, err := schema.Compile([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func ids(records []event.Record) []uint64 {
	out := make([]uint64, len(records))
	for i, r := range records {
		out[i] = r.ID
	}
	return out
}

// TestVerifyChecksRuns damages the runs of a verified database in each way
// a run can be wrong: verify reports each as corruption.
func TestVerifyChecksRuns(t *testing.T) {
	url := pg.Database(t)
	s := node(t, url)
	batch := []event.Candidate{candidate("/a", `{}`), candidate("/a", `{}`), candidate("/b", `{}`)}
	for range 2 {
		if _, err := s.Write(context.Background(), batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Close(t, s)
	verify(t, url)
	database := databaseOf(url)
	for _, damage := range []struct{ name, sql, undo string }{
		{"a run missing",
			"DELETE FROM eventstore.subject_runs WHERE last_id = 2",
			"INSERT INTO eventstore.subject_runs VALUES ('/b', 2, 2)"},
		{"a run of another subject",
			"UPDATE eventstore.subject_runs SET subject = '/b' WHERE last_id = 1",
			"UPDATE eventstore.subject_runs SET subject = '/a' WHERE last_id = 1"},
		{"a run longer than its events",
			"UPDATE eventstore.type_runs SET last_id = 6 WHERE last_id = 5",
			"UPDATE eventstore.type_runs SET last_id = 5 WHERE last_id = 6"},
		{"runs that overlap",
			"INSERT INTO eventstore.subject_runs VALUES ('/a', 0, 0)",
			"DELETE FROM eventstore.subject_runs WHERE last_id = 0"},
		{"a run backwards",
			"UPDATE eventstore.subject_runs SET first_id = 4, last_id = 3 WHERE last_id = 4",
			"UPDATE eventstore.subject_runs SET first_id = 3, last_id = 4 WHERE last_id = 3"},
	} {
		if err := pg.Cluster(t).Exec(context.Background(), database, damage.sql); err != nil {
			t.Fatal(err)
		}
		var corrupt *store.CorruptionError
		if _, err := verifyErr(t, url); !errors.As(err, &corrupt) {
			t.Errorf("%s: verify says %v, want a corruption error", damage.name, err)
		} else {
			t.Logf("%s: %v", damage.name, err)
		}
		if err := pg.Cluster(t).Exec(context.Background(), database, damage.undo); err != nil {
			t.Fatal(err)
		}
		verify(t, url)
	}
}
