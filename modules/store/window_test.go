package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
)

func written(id uint64, subject string, size int) Written {
	return Written{Record: event.Record{ID: id, JSON: []byte(strings.Repeat("x", size))}, Subject: subject, Type: "io.example.x"}
}

func TestWindowEvictsByCountAndBytes(t *testing.T) {
	w := newWindow(DefaultWindowBytes)
	for id := uint64(0); id < windowEvents+10; id++ {
		w.add([]Written{written(id, "/a", 10)})
	}
	if w.count != windowEvents || w.first != 10 {
		t.Fatalf("count %d first %d after %d events", w.count, w.first, windowEvents+10)
	}
	if _, _, ok := w.scan(Scan{Subject: "/", Recursive: true, From: 9, To: 20}); ok {
		t.Fatal("window served a range it no longer holds")
	}
	// A range past the newest record: a shared backend's reads may reach
	// events this store has not followed yet, which storage must serve.
	if _, _, ok := w.scan(Scan{Subject: "/", Recursive: true, From: 20, To: windowEvents + 10}); ok {
		t.Fatal("window served a range beyond its newest record")
	}
	records, holes, ok := w.scan(Scan{Subject: "/", Recursive: true, From: 10, To: 12})
	if !ok || holes || len(records) != 3 || records[0].ID != 10 || records[2].ID != 12 {
		t.Fatalf("scan 10..12: %v %v", ok, records)
	}

	for _, limit := range []int{DefaultWindowBytes, 4 << 20} {
		big := newWindow(limit)
		for id := uint64(0); id < 40; id++ {
			big.add([]Written{written(id, "/a", 1<<20)})
		}
		if big.bytes > limit || big.count != limit>>20 || big.first != 40-uint64(big.count) {
			t.Fatalf("limit %d: bytes %d count %d first %d", limit, big.bytes, big.count, big.first)
		}
	}
	huge := newWindow(DefaultWindowBytes)
	huge.add([]Written{written(0, "/a", DefaultWindowBytes+1)})
	if huge.count != 1 {
		t.Fatal("an event larger than the byte bound must still be kept alone")
	}
}

func TestWindowFilters(t *testing.T) {
	w := newWindow(DefaultWindowBytes)
	subjects := []string{"/a", "/a/b", "/ab", "/b", "/a"}
	for i, s := range subjects {
		w.add([]Written{written(uint64(i), s, 1)})
	}
	ids := func(s Scan) string {
		records, holes, ok := w.scan(s)
		if !ok || holes {
			t.Fatalf("scan %+v not served", s)
		}
		var out []string
		for _, r := range records {
			out = append(out, fmt.Sprint(r.ID))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		s    Scan
		want string
	}{
		{Scan{Subject: "/a", From: 0, To: 4}, "0,4"},
		{Scan{Subject: "/a", Recursive: true, From: 0, To: 4}, "0,1,4"},
		{Scan{Subject: "/", Recursive: true, From: 1, To: 3}, "1,2,3"},
		{Scan{Subject: "/a", Recursive: true, From: 0, To: 4, Descending: true}, "4,1,0"},
		{Scan{Type: "io.example.x", From: 3, To: 4}, "3,4"},
		{Scan{Type: "io.example.y", From: 0, To: 4}, ""},
	} {
		if got := ids(tc.s); got != tc.want {
			t.Errorf("scan %+v: got %q, want %q", tc.s, got, tc.want)
		}
	}
}

// reader serves the scans of a window's fill from records, counting them.
type reader struct {
	Reader
	records []event.Record
	scans   int
}

func (r *reader) Scan(s Scan) RecordIterator {
	r.scans++
	var out []event.Record
	for _, rec := range r.records {
		if rec.ID >= s.From && rec.ID <= s.To {
			out = append(out, rec)
		}
	}
	return &sliceIterator{records: out}
}

// TestWindowFillsHoles keeps events without records (another node's, as a
// commit followed them): a scan that selects none of them is served, one
// that does reports holes, which one read of storage fills for every
// later scan; a precondition's check does not count them as held.
func TestWindowFillsHoles(t *testing.T) {
	w := newWindow(DefaultWindowBytes)
	stored := &reader{}
	for i, s := range []string{"/a", "/b", "/b", "/a", "/b"} {
		r := written(uint64(i), s, 5)
		stored.records = append(stored.records, r.Record)
		if s == "/b" {
			r.Record.JSON = nil // followed by name
		}
		w.add([]Written{r})
	}
	if records, holes, ok := w.scan(Scan{Subject: "/a", From: 0, To: 4}); !ok || holes || len(records) != 2 {
		t.Fatalf("scan of /a: %d records, holes %v, ok %v", len(records), holes, ok)
	}
	if _, holes, ok := w.scan(Scan{Subject: "/b", From: 0, To: 4}); !ok || !holes {
		t.Fatalf("scan of /b: holes %v, ok %v", holes, ok)
	}
	if _, covered := w.any(0, 5, func(Written) bool { return false }); covered {
		t.Fatal("a check over holes counted them as held")
	}
	for range 2 {
		if err := w.fill(stored, 0, 4); err != nil {
			t.Fatal(err)
		}
	}
	if stored.scans != 1 {
		t.Fatalf("two fills read storage %d times", stored.scans)
	}
	records, holes, ok := w.scan(Scan{Subject: "/b", From: 0, To: 4})
	if !ok || holes || len(records) != 3 || string(records[1].JSON) != "xxxxx" || w.bytes != 25 {
		t.Fatalf("scan of /b after the fill: %v, holes %v, ok %v, window bytes %d", records, holes, ok, w.bytes)
	}
	if _, covered := w.any(0, 5, func(Written) bool { return false }); !covered {
		t.Fatal("a check after the fill did not count the events as held")
	}
}

// TestWindowReadsDataIndexKeys serves a read of a data index from the keys
// the index gave the window's records at their commit, each lookup within
// its own ids, and leaves to storage a read that spans a record the index
// did not key (a hole, or one its build keys) or more than
// windowKeyedSpan ids.
func TestWindowReadsDataIndexKeys(t *testing.T) {
	w := newWindow(DefaultWindowBytes)
	keys := [][]dataindex.Key{{"sc1", "ka"}, {"sc2", "ka"}, {}, {"sc1", "sc2", "ka"}, {"sc2", "ka"}}
	for i, k := range keys {
		r := written(uint64(i), "/a", 1)
		r.Keyed = []dataindex.Keyed{{Index: 9, Keys: k}, {Index: 3, Keys: []dataindex.Key{"sc1"}}}
		w.add([]Written{r})
	}
	unkeyed := written(5, "/a", 1)
	unkeyed.Keyed = []dataindex.Keyed{{Index: 3, Keys: []dataindex.Key{"sc1"}}}
	w.add([]Written{unkeyed, written(6, "/a", 1)})
	read := func(from, to uint64, descending bool, lookups ...dataindex.Lookup) (string, bool) {
		records, holes, ok := w.scan(Scan{DataIndex: 9, DataKeys: lookups, From: from, To: to, Descending: descending})
		if holes {
			t.Fatalf("holes in %d..%d", from, to)
		}
		var out []string
		for _, r := range records {
			out = append(out, fmt.Sprint(r.ID))
		}
		return strings.Join(out, ","), ok
	}
	all := func(k dataindex.Key) dataindex.Lookup { return dataindex.Lookup{Key: k, To: ^uint64(0)} }
	for _, tc := range []struct {
		from, to   uint64
		descending bool
		lookups    []dataindex.Lookup
		want       string
	}{
		{0, 4, false, []dataindex.Lookup{all("sc1")}, "0,3"},
		{1, 4, false, []dataindex.Lookup{all("sc1"), all("sc2")}, "1,3,4"},
		{0, 4, true, []dataindex.Lookup{all("sc2")}, "4,3,1"},
		{0, 4, false, []dataindex.Lookup{{Key: "sc2", From: 2, To: 3}, {Key: "sc1", To: 0}}, "0,3"},
		{0, 4, false, []dataindex.Lookup{all("sx")}, ""},
	} {
		got, ok := read(tc.from, tc.to, tc.descending, tc.lookups...)
		if !ok || got != tc.want {
			t.Errorf("%d..%d %+v: %q (served %t), want %q", tc.from, tc.to, tc.lookups, got, ok, tc.want)
		}
	}
	for _, to := range []uint64{5, 6} {
		if _, ok := read(0, to, false, all("sc1")); ok {
			t.Errorf("a read of 0..%d over a record that the index did not key was served", to)
		}
	}
	for id := uint64(7); id < windowKeyedSpan+10; id++ {
		r := written(id, "/a", 1)
		r.Keyed = []dataindex.Keyed{{Index: 9}}
		w.add([]Written{r})
	}
	if _, ok := read(7, 7+windowKeyedSpan-1, false, all("sc1")); !ok {
		t.Errorf("a read of %d ids was not served", windowKeyedSpan)
	}
	if _, ok := read(7, 7+windowKeyedSpan, false, all("sc1")); ok {
		t.Errorf("a read of %d ids was served", windowKeyedSpan+1)
	}
}
