package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestPurge erases a customer's events while another node's erasure and
// plain writes come between the purge's copy and its swap: the purge
// starts over once and then swaps, the writes and their keys stay, and
// neither erasure's bytes are in a file of the database afterwards (after
// a checkpoint too), where they were before.
func TestPurge(t *testing.T) {
	cluster := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	url, err := cluster.CreateDatabase(ctx, "purge")
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgstore.Open(ctx, url, zap.NewNop(), pgstore.Options{MaxConnections: 8})
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.Start(t, func() (store.Backend, error) { return b, nil })
	other := node(t, url)
	if _, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "email", Path: "/email"}); err != nil {
		t.Fatal(err)
	}
	const marker, otherMarker = "QXVKMWPLHGYRSNJU", "JUNSRYGHLPWMKVXQ"
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(s *store.Store, subject, email string) {
		t.Helper()
		pad := make([]byte, 3000) // lowercase letters that do not compress: the record goes to TOAST
		for i := range pad {
			pad[i] = byte('a' + rng.IntN(26))
		}
		data := fmt.Sprintf(`{"email":%q,"pad":"%s"}`, email, pad)
		if _, err := s.Write(ctx, []event.Candidate{{Source: "https://pgstore.test", Subject: subject, Type: "io.example.registered", Data: []byte(data)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		write(s, "/c/42", fmt.Sprintf("%s-%d@example.com", marker, i))
		write(s, "/c/43", fmt.Sprintf("%s-%d@example.com", otherMarker, i))
		write(s, "/c/7", fmt.Sprintf("kept-%d@example.com", i))
	}
	base := filepath.Join(cluster.DataDir(), "base")
	checkpoint := func() {
		t.Helper()
		if err := cluster.Exec(ctx, "purge", "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint()
	for _, m := range []string{marker, otherMarker} {
		if len(storetest.FilesHolding(t, base, m)) == 0 {
			t.Fatalf("%s is in no file before the erasures", m)
		}
	}

	copies := 0
	otherErased := make(chan error, 1)
	b.SetPurgeHook(func(string) {
		copies++
		if copies > 1 {
			return
		}
		// Appends, and another node's erasure (ids: this erasure's
		// management event 150, the append 151, the other's 152), whose
		// purge waits for this one.
		write(s, "/c/8", "late@example.com")
		go func() {
			_, _, err := other.Erase(ctx, store.Erasure{Subject: "/c/43", Reason: "asked too"})
			otherErased <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); s.Durable() < 153; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the other node's erasure did not commit")
				return
			}
		}
	})
	if n, _, err := s.Erase(ctx, store.Erasure{Subject: "/c/42", Reason: "asked"}); err != nil || n != 50 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if files := storetest.FilesHolding(t, base, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are still in %v", files)
	}
	if copies != 2 {
		t.Fatalf("the purge copied the tables %d times, want 2 (the other erasure made it start over)", copies)
	}
	if err := <-otherErased; err != nil {
		t.Fatalf("the other node's erasure: %v", err)
	}
	if files := storetest.FilesHolding(t, base, otherMarker); len(files) > 0 {
		t.Fatalf("the bytes the other node erased are still in %v", files)
	}
	checkpoint()
	for _, m := range []string{marker, otherMarker} {
		if files := storetest.FilesHolding(t, base, m); len(files) > 0 {
			t.Fatalf("%s is in %v after a checkpoint", m, files)
		}
	}
	if len(storetest.FilesHolding(t, base, "kept-49@example.com")) == 0 || len(storetest.FilesHolding(t, base, "late@example.com")) == 0 {
		t.Fatal("the events not erased are in no file after the rewrite")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var keys int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM eventstore.data_keys WHERE position($1::bytea IN key) > 0", []byte("late@example.com")).Scan(&keys); err != nil || keys != 1 {
		t.Fatalf("the key of the event written during the purge: %d %v", keys, err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM eventstore.data_keys").Scan(&keys); err != nil || keys != 2*51 {
		t.Fatalf("keys after the erasures: %d %v, want those of the 51 events not erased (a value and its kind each)", keys, err)
	}
	if n := b.Describe()["erasedEvents"]; n != int64(100) {
		t.Fatalf("erasedEvents %v", n)
	}
}
