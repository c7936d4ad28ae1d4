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
	"github.com/eventstore-service/eventstore/modules/store/verify"
)

// filledDir writes 20 events on a few subjects into a new store, one per
// commit, and returns its directory.
func filledDir(t *testing.T) string {
	t.Helper()
	return writtenDir(t, 20, 1)
}

// writtenDir writes n events on subjects /a/<i mod 3>/b into a new store,
// batch per request, and returns its directory.
func writtenDir(t *testing.T, n, batch int) string {
	t.Helper()
	dir := t.TempDir()
	s := store.New(func() (store.Backend, error) { return Open(dir, zap.NewNop(), Options{}) }, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += batch {
		var cs []event.Candidate
		for j := i; j < min(i+batch, n); j++ {
			cs = append(cs, event.Candidate{Source: "https://x", Subject: fmt.Sprintf("/a/%d/b", j%3), Type: "io.example.thing", Data: []byte(fmt.Sprintf(`{"i":%d}`, j))})
		}
		if _, err := s.Write(context.Background(), cs, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// verifyWith verifies the store in dir, opened read-only, with opts.
func verifyWith(t *testing.T, dir string, opts verify.Options) (uint64, error) {
	t.Helper()
	b, err := Open(dir, zap.NewNop(), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return verify.Verify(context.Background(), b, opts)
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
	if n, err := verifyWith(t, filledDir(t), verify.Options{}); err != nil || n != 20 {
		t.Fatalf("intact store: %d events, %v", n, err)
	}

	checkDamages(t, filledDir, []damage{
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
	}, verify.Options{})
}

// damage is a change to a stopped store and the problem Verify must name
// first.
type damage struct {
	name   string
	change func(t *testing.T, b *Backend)
	want   string
}

// checkDamages makes each damage to a new store that fill writes, and
// checks that Verify names it with each of opts.
func checkDamages(t *testing.T, fill func(t *testing.T) string, damages []damage, opts ...verify.Options) {
	t.Helper()
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir := fill(t)
			tamper(t, dir, func(b *Backend) { d.change(t, b) })
			for _, o := range opts {
				_, err := verifyWith(t, dir, o)
				var corrupt *store.CorruptionError
				if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), d.want) {
					t.Fatalf("%d workers: got %v, want a corruption containing %q", o.Workers, err, d.want)
				}
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

// changeData changes the data of event id so that its hash no longer matches.
func changeData(t *testing.T, b *Backend, id uint64) {
	t.Helper()
	r, _, _ := b.Record(id)
	changed := strings.Replace(string(r.JSON), fmt.Sprintf(`"i":%d`, id), `"i":-1`, 1)
	must(t, b.db.Set(eventKey(nil, id), []byte(changed), nil))
}

// TestVerifyInChunks runs Verify on a store of several chunks with more
// workers than cores: damage in later chunks, which workers may well check
// first, never hides the problem of a lower id, and an event missing at the
// end of a chunk, or after the last one, is found as in a single scan.
func TestVerifyInChunks(t *testing.T) {
	const n = 5000
	intact := writtenDir(t, n, 500)
	if got, err := verifyWith(t, intact, verify.Options{Workers: 8}); err != nil || got != n {
		t.Fatalf("intact store: %d events, %v", got, err)
	}
	checkDamages(t, func(t *testing.T) string { return writtenDir(t, n, 500) }, []damage{
		{"damage in three chunks", func(t *testing.T, b *Backend) {
			changeData(t, b, 4900)
			changeData(t, b, 3000)
			changeData(t, b, 1500)
		}, "event 1500: stored hash"},
		{"missing at the end of a chunk", func(t *testing.T, b *Backend) {
			must(t, b.db.Delete(eventKey(nil, 2047), nil))
			changeData(t, b, 2500)
		}, "event 2047 is missing (next stored id is 2048)"},
		{"missing chunk", func(t *testing.T, b *Backend) {
			must(t, b.db.DeleteRange(eventKey(nil, 1024), eventKey(nil, 2048), nil))
		}, "event 1024 is missing (next stored id is 2048)"},
		{"stray event far beyond the log", func(t *testing.T, b *Backend) {
			r, _, _ := b.Record(n - 1)
			must(t, b.db.Set(eventKey(nil, 1<<40), r.JSON, nil))
		}, fmt.Sprintf("event %d is missing (next stored id is %d)", n, uint64(1<<40))},
		{"last events missing", func(t *testing.T, b *Backend) {
			must(t, b.db.DeleteRange(eventKey(nil, n-10), eventKey(nil, n), nil))
		}, fmt.Sprintf("head says %d events", n)},
	}, verify.Options{Workers: 1}, verify.Options{Workers: 3}, verify.Options{Workers: 8})
}

// TestVerifySnapshot verifies the first events of a store as a snapshot of
// it, as an online verification does: the events and index entries beyond
// the snapshot are left alone, an index entry beyond the log is not.
func TestVerifySnapshot(t *testing.T) {
	dir := filledDir(t)
	var head store.Head
	tamper(t, dir, func(b *Backend) {
		r, _, _ := b.Record(9)
		head = store.Head{Count: 10, LastHash: r.Hash()}
	})
	var progress []uint64
	n, err := verifyWith(t, dir, verify.Options{Head: &head, Progress: func(checked uint64) { progress = append(progress, checked) }})
	if err != nil || n != 10 {
		t.Fatalf("snapshot of 10 events: %d events, %v", n, err)
	}
	if len(progress) == 0 || progress[len(progress)-1] != 10 {
		t.Fatalf("progress %v, want it to end at 10", progress)
	}
	wrong := store.Head{Count: 10, LastHash: event.ZeroHash}
	if _, err := verifyWith(t, dir, verify.Options{Head: &wrong}); err == nil || !strings.Contains(err.Error(), "head says 10 events ending in "+event.ZeroHash) {
		t.Fatalf("snapshot with a wrong head hash: %v", err)
	}
	empty := store.Head{LastHash: event.ZeroHash}
	if n, err := verifyWith(t, dir, verify.Options{Head: &empty}); err != nil || n != 0 {
		t.Fatalf("empty snapshot: %d events, %v", n, err)
	}

	tamper(t, dir, func(b *Backend) {
		must(t, b.db.Set(appendID(typePrefix(nil, "io.example.ghost"), 20), nil, nil))
	})
	if _, err := verifyWith(t, dir, verify.Options{Head: &head}); err == nil || !strings.Contains(err.Error(), "lists event 20 beyond the log") {
		t.Fatalf("snapshot with an index entry beyond the log: %v", err)
	}
}

// TestVerifyStops: a cancelled verification ends with the context's error.
func TestVerifyStops(t *testing.T) {
	dir := writtenDir(t, 3000, 500)
	b, err := Open(dir, zap.NewNop(), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := verify.Verify(ctx, b, verify.Options{Progress: func(uint64) { cancel() }})
	if !errors.Is(err, context.Canceled) || n >= 3000 {
		t.Fatalf("cancelled verification: %d events, %v", n, err)
	}
}
