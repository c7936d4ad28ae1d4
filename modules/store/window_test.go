package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
)

func written(id uint64, subject string, size int) Written {
	return Written{Record: event.Record{ID: id, JSON: []byte(strings.Repeat("x", size))}, Subject: subject, Type: "io.example.x"}
}

func TestWindowEvictsByCountAndBytes(t *testing.T) {
	w := newWindow()
	for id := uint64(0); id < windowEvents+10; id++ {
		w.add([]Written{written(id, "/a", 10)})
	}
	if w.count != windowEvents || w.first != 10 {
		t.Fatalf("count %d first %d after %d events", w.count, w.first, windowEvents+10)
	}
	if _, ok := w.scan(Scan{Subject: "/", Recursive: true, From: 9, To: 20}); ok {
		t.Fatal("window served a range it no longer holds")
	}
	// A range past the newest record: a shared backend's reads may reach
	// events this store has not followed yet, which storage must serve.
	if _, ok := w.scan(Scan{Subject: "/", Recursive: true, From: 20, To: windowEvents + 10}); ok {
		t.Fatal("window served a range beyond its newest record")
	}
	records, ok := w.scan(Scan{Subject: "/", Recursive: true, From: 10, To: 12})
	if !ok || len(records) != 3 || records[0].ID != 10 || records[2].ID != 12 {
		t.Fatalf("scan 10..12: %v %v", ok, records)
	}

	big := newWindow()
	for id := uint64(0); id < 40; id++ {
		big.add([]Written{written(id, "/a", 1<<20)})
	}
	if big.bytes > windowBytes || big.count != windowBytes>>20 || big.first != 40-uint64(big.count) {
		t.Fatalf("bytes %d count %d first %d", big.bytes, big.count, big.first)
	}
	huge := newWindow()
	huge.add([]Written{written(0, "/a", windowBytes+1)})
	if huge.count != 1 {
		t.Fatal("an event larger than the byte bound must still be kept alone")
	}
}

func TestWindowFilters(t *testing.T) {
	w := newWindow()
	subjects := []string{"/a", "/a/b", "/ab", "/b", "/a"}
	for i, s := range subjects {
		w.add([]Written{written(uint64(i), s, 1)})
	}
	ids := func(s Scan) string {
		records, ok := w.scan(s)
		if !ok {
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
