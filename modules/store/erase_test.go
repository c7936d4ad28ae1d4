package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestErasePebble erases the events of a subject in a store whose records
// sit in the memtable, the WAL, tables and blob files, with a data index
// keyed by the erased values, and finds the erased bytes nowhere in the
// data directory once Erase returns, while the rest stays readable and the
// store verifies.
func TestErasePebble(t *testing.T) {
	dir := t.TempDir()
	open := storetest.PebbleAt(dir, nil)
	s := storetest.Start(t, open)
	ctx := context.Background()
	if _, err := s.RegisterDataIndex(ctx, dataindex.Definition{Name: "email", Path: "/email"}); err != nil {
		t.Fatal(err)
	}
	// Letters that no record holds otherwise: compression keeps the first
	// copy in each block of a file as it is.
	const marker = "QXVKMWPLHGYRSNJU"
	write := func(n int) {
		for i := range n {
			storetest.Write(t, s,
				storetest.Candidate("/customers/42", "io.x.registered", fmt.Sprintf(`{"email":"%s-%d@example.com","pad":"%s"}`, marker, i, strings.Repeat("p", 300))),
				storetest.Candidate("/customers/42/orders/1", "io.x.ordered", fmt.Sprintf(`{"note":"%s order %d"}`, marker, i)),
			)
			// Many more events are kept: the erased ones are too few a
			// share of the blob files for Pebble to rewrite them unasked.
			var kept []event.Candidate
			for j := range 12 {
				kept = append(kept, storetest.Candidate("/customers/7", "io.x.registered", fmt.Sprintf(`{"email":"kept-%d-%d@example.com","pad":"%s"}`, i, j, strings.Repeat("p", 300))))
			}
			storetest.Write(t, s, kept...)
		}
	}
	write(200)
	// A restart flushes the WAL it replays: records in tables and blob
	// files, and more in the memtable and the WAL.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s = storetest.Start(t, open)
	write(50)
	if files := storetest.FilesHolding(t, dir, marker); !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".blob") }) {
		t.Fatalf("the marker is in no blob file before the erasure, only in %v", files)
	}

	n, mgmt, err := s.Erase(ctx, store.Erasure{Subject: "/customers/42", Recursive: true, Reason: "request of the data subject", Token: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 500 || mgmt == nil {
		t.Fatalf("erased %d, management event %v", n, mgmt)
	}
	if files := storetest.FilesHolding(t, dir, marker); len(files) > 0 {
		t.Fatalf("the erased bytes are still in %v", files)
	}
	f, err := event.Decode(*mgmt)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != event.ErasedType || f.Subject != "/customers/42" ||
		string(f.Data) != fmt.Sprintf(`{"eventTypes":[],"events":500,"firstId":"0","lastId":"%d","reason":"request of the data subject","recursive":true,"token":"operator","upperBound":null}`, 249*14+1) {
		t.Fatalf("management event %+v, data %s", f, f.Data)
	}
	erasedForm := fmt.Sprintf(`{"$erased":{"at":"%s","by":"%s"}}`, f.Time, f.ID)
	it := s.Scan(store.Scan{Subject: "/", Recursive: true, From: 0, To: s.Durable() - 1})
	erased := 0
	for it.Next() {
		g, err := event.Decode(it.Record())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case g.Type == event.ErasedType:
		case strings.HasPrefix(g.Subject, "/customers/42"):
			if string(g.Data) != erasedForm {
				t.Errorf("event %s of %s reads %s", g.ID, g.Subject, g.Data)
			}
			erased++
		case !strings.Contains(string(g.Data), "kept-"):
			t.Errorf("event %s of %s reads %s", g.ID, g.Subject, g.Data)
		}
	}
	if err := it.Close(); err != nil || erased != 500 {
		t.Fatalf("read %d erased events: %v", erased, err)
	}
	if _, err := storetest.Verify(ctx, s.Backend()); err != nil {
		t.Fatalf("verify after the erasure: %v", err)
	}

	// Again: nothing left to erase, nothing written.
	n, mgmt, err = s.Erase(ctx, store.Erasure{Subject: "/customers/42", Recursive: true, Reason: "again"})
	if err != nil || n != 0 || mgmt != nil {
		t.Fatalf("second erasure: %d, %v, %v", n, mgmt, err)
	}
	beyond := s.Durable()
	if _, _, err := s.Erase(ctx, store.Erasure{Subject: "/customers/7", UpperBound: &beyond, Reason: "x"}); !errors.Is(err, store.ErrBeyondHead) {
		t.Fatalf("an upper bound beyond the head: %v", err)
	}
}

// TestEraseBesideWrites erases a subject again and again while writers
// keep writing to it and to others: each erasure takes exactly the events
// of the subject committed before its management event and not erased
// before, so that every erased event names as its eraser the first
// management event after it, and none after the last is erased.
func TestEraseBesideWrites(t *testing.T) {
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	ctx := context.Background()
	// Each writer writes a bounded number of events, so that the scans of
	// the erasures, which read every event of the subject, stay bounded
	// however slow the machine (the race detector) makes them.
	const perWriter = 400
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := "/customers/42"
			if w == 7 {
				subject = "/customers/7"
			}
			for i := range perWriter {
				if _, err := s.Write(ctx, []event.Candidate{storetest.Candidate(subject, "io.x.registered", fmt.Sprintf(`{"n":%d}`, i))}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	written := make(chan struct{})
	go func() { wg.Wait(); close(written) }()
	var erasers []uint64 // the management events' ids, ascending
	total := 0
	for writing := true; writing; {
		select {
		case <-written:
			writing = false
		case <-time.After(5 * time.Millisecond):
		}
		n, mgmt, err := s.Erase(ctx, store.Erasure{Subject: "/customers/42", Reason: "beside writes"})
		if err != nil {
			t.Fatal(err)
		}
		if mgmt != nil {
			erasers = append(erasers, mgmt.ID)
			total += n
		}
	}
	if len(erasers) < 2 {
		t.Fatalf("%d erasures beside the writes", len(erasers))
	}
	erased, after := 0, 0
	it := s.Scan(store.Scan{Subject: "/customers/42", From: 0, To: s.Durable() - 1})
	for it.Next() {
		id := it.Record().ID
		f, err := event.Decode(it.Record())
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == event.ErasedType {
			continue
		}
		var form struct {
			Erased *struct{ By string } `json:"$erased"`
		}
		if err := json.Unmarshal(f.Data, &form); err != nil {
			t.Fatal(err)
		}
		next := erasers[len(erasers)-1]
		for i := len(erasers) - 1; i >= 0 && erasers[i] > id; i-- {
			next = erasers[i]
		}
		switch {
		case id > erasers[len(erasers)-1]:
			if form.Erased != nil {
				t.Errorf("event %d, after the last erasure %d, is erased by %s", id, next, form.Erased.By)
			}
			after++
		case form.Erased == nil || form.Erased.By != fmt.Sprint(next):
			t.Errorf("event %d reads %s, want erased by %d", id, f.Data, next)
		default:
			erased++
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if erased != total || erased != 7*perWriter-after {
		t.Fatalf("%d events read erased, %d erased, %d written after the last erasure", erased, total, after)
	}
	if _, err := storetest.Verify(ctx, s.Backend()); err != nil {
		t.Fatal(err)
	}
}

// TestEraseSkipsWhatAnotherErased: the events an erasure read before it
// was queued, of which another erasure committed meanwhile erased some
// (on a shared backend, another node's), are read again, and those are
// left out; with no erasure since, the writer reads nothing again.
func TestEraseSkipsWhatAnotherErased(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	var read []event.Record
	for _, subject := range []string{"/a", "/b", "/a", "/b"} {
		read = append(read, storetest.Write(t, s, storetest.Candidate(subject, "io.x.registered", `{"n":1}`))...)
	}
	if ids, err := store.StillToErase(s, read); err != nil || !slices.Equal(ids, []uint64{0, 1, 2, 3}) {
		t.Fatalf("with no erasure since: %v %v", ids, err)
	}
	if n, _, err := s.Erase(context.Background(), store.Erasure{Subject: "/a", Reason: "asked"}); err != nil || n != 2 {
		t.Fatalf("erase /a: %d %v", n, err)
	}
	if ids, err := store.StillToErase(s, read); err != nil || !slices.Equal(ids, []uint64{1, 3}) {
		t.Fatalf("after an erasure of /a: %v %v", ids, err)
	}
}
