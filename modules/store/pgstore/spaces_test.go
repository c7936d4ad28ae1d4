package pgstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestChangedSpaces checks which spaces of feature state the backend names
// as changed after a number of changes: those of the commits after it, and
// none it can vouch for when a node of a release that does not keep
// eventstore.state_spaces committed state in between; and that a database
// of such a release gets the table when a node opens it.
func TestChangedSpaces(t *testing.T) {
	url := pg.Database(t)
	ctx := context.Background()
	change := func(s *store.Store, space, key string) uint64 {
		t.Helper()
		if _, err := s.Commit(ctx, store.Request{Changes: []store.Change{{Space: space, Key: key, Value: []byte("v"), Expect: store.AnyVersion}}}); err != nil {
			t.Fatal(err)
		}
		return s.DurableHead().States
	}
	check := func(step string, s *store.Store, since uint64, want []string) {
		t.Helper()
		got, known, err := s.Backend().ChangedSpaces(since)
		slices.Sort(got)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", step, err)
		case want == nil && known:
			t.Errorf("%s: changed after %d: %q, want unknown", step, since, got)
		case want != nil && (!known || !slices.Equal(got, want)):
			t.Errorf("%s: changed after %d: %q (known %v), want %q", step, since, got, known, want)
		}
	}

	// A database of a release before state_spaces, with state already.
	s := node(t, url)
	before := change(s, "a", "1")
	storetest.Close(t, s)
	exec(t, url, "DROP TABLE eventstore.state_spaces; ALTER TABLE eventstore.head DROP COLUMN spaces_count")

	s = node(t, url)
	check("added to an older database", s, before, []string{})
	one := change(s, "a", "2")
	two := change(s, "b", "1")
	check("after two commits", s, before, []string{"a", "b"})
	check("after one commit", s, one, []string{"b"})
	check("after none", s, two, []string{})

	// A node of the older release commits a change without naming its
	// space (and without notifying: the store does not follow it).
	exec(t, url, `INSERT INTO eventstore.state SELECT 'c', 'old', 'v', state_count + 1 FROM eventstore.head;
UPDATE eventstore.head SET state_count = state_count + 1, commits = commits + 1`)
	check("after an older node's commit", s, two, nil)
	check("after an older node's commit, from before it", s, one, nil)
	three := two + 1 // the older node's change

	// The next commit records the gap: a node that followed less than the
	// older node's change cannot tell which spaces changed, one that
	// followed it (reading every space) can.
	four := change(s, "b", "2")
	check("after the gap was recorded, from before it", s, two, nil)
	check("after the gap was recorded, from the older node's change", s, three, []string{"b"})
	check("after the gap was recorded, from the last change", s, four, []string{})
}

// exec runs sql on the database at url.
func exec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}
