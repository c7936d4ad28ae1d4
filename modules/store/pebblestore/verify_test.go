package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// filledDir writes events on a few subjects into a new store and returns its directory.
func filledDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := store.New(func() (store.Backend, error) { return Open(dir, zap.NewNop(), Options{}) }, zap.NewNop(), nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		c := event.Candidate{Source: "https://x", Subject: fmt.Sprintf("/a/%d/b", i%3), Type: "io.example.thing", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		if _, err := s.Write(context.Background(), []event.Candidate{c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir
}

func verify(t *testing.T, dir string) (uint64, error) {
	t.Helper()
	b, err := Open(dir, zap.NewNop(), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return store.Verify(context.Background(), NewVerifier(b))
}

// tamper changes the raw Pebble store in dir.
func tamper(t *testing.T, dir string, change func(b *Backend)) {
	t.Helper()
	b, err := Open(dir, zap.NewNop(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	change(b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestVerify(t *testing.T) {
	if n, err := verify(t, filledDir(t)); err != nil || n != 20 {
		t.Fatalf("intact store: %d events, %v", n, err)
	}

	cases := []struct {
		name   string
		change func(t *testing.T, b *Backend)
		want   string
	}{
		{"changed data", func(t *testing.T, b *Backend) {
			r, _, _ := b.Record(7)
			changed := strings.Replace(string(r.JSON), `"i":7`, `"i":8`, 1)
			must(t, b.db.Set(eventKey(nil, 7), []byte(changed), nil))
		}, "event 7: stored hash"},
		{"missing event", func(t *testing.T, b *Backend) {
			must(t, b.db.Delete(eventKey(nil, 12), nil))
		}, "event 12 is missing"},
		{"missing index entry", func(t *testing.T, b *Backend) {
			must(t, b.db.Delete(appendID(treePrefix(nil, "/a/1"), 4), nil))
		}, `index "t" holds 39 entries, the events need 40`},
		{"index entry beyond the log", func(t *testing.T, b *Backend) {
			must(t, b.db.Set(appendID(typePrefix(nil, "io.example.ghost"), 99), nil, nil))
		}, "lists event 99 beyond the log"},
		{"index entry under the wrong prefix", func(t *testing.T, b *Backend) {
			must(t, b.db.Delete(appendID(exactPrefix(nil, "/a/1/b"), 4), nil))
			must(t, b.db.Set(appendID(exactPrefix(nil, "/a/2/b"), 4), nil, nil))
		}, "lists event 4 of /a/1/b (io.example.thing), which does not belong there"},
		{"index entry listed twice", func(t *testing.T, b *Backend) {
			// A posting of ids 3 and 4 beside the existing postings of 3 and of 4.
			must(t, b.db.Set(appendID(typePrefix(nil, "io.example.thing"), 3), postingValue(nil, []uint64{3, 4}), nil))
		}, "lists event 4 twice or out of order"},
		{"head beyond the log", func(t *testing.T, b *Backend) {
			h, _ := b.Head()
			h.Count++
			value, _ := encodeHead(h)
			must(t, b.db.Set(headKey, value, nil))
		}, "head says 21 events"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filledDir(t)
			tamper(t, dir, func(b *Backend) { tc.change(t, b) })
			_, err := verify(t, dir)
			var corrupt *store.CorruptionError
			if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a corruption containing %q", err, tc.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
