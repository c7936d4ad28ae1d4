package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// The tree of BenchmarkSubjectTree: benchTenants × benchOrders subjects
// /tenants/<t>/orders/<o> and benchFlat children of /flat, one event each:
// 1,000,000 subjects, three of them /tenants/<t>/orders/needle-<t>.
const (
	benchTenants = 990
	benchOrders  = 1000
	benchFlat    = 10000
)

// benchSubject returns the i-th subject of the tree.
func benchSubject(i int) string {
	if i >= benchTenants*benchOrders {
		return fmt.Sprintf("/flat/%d", i-benchTenants*benchOrders)
	}
	t, o := i/benchOrders, i%benchOrders
	if o == 0 && t%400 == 7 {
		return fmt.Sprintf("/tenants/%d/orders/needle-%d", t, t)
	}
	return fmt.Sprintf("/tenants/%d/orders/%d", t, o)
}

// BenchmarkSubjectTree measures, on Pebble at 1,000,000 subjects, what the
// console's subject tree asks: a page of 100 children of a node with 990
// and of one with 10,000 children (first and later pages), and searches:
// the first page of a frequent term, one 50-ms page of a term that matches
// almost nothing, the whole search for it page by page, and a prefix.
func BenchmarkSubjectTree(b *testing.B) {
	s := storetest.Start(b, storetest.Pebble.New(b))
	start := time.Now()
	const batch = 10000
	total := benchTenants*benchOrders + benchFlat
	for from := 0; from < total; from += batch {
		cs := make([]event.Candidate, 0, batch)
		for i := from; i < min(from+batch, total); i++ {
			cs = append(cs, event.Candidate{Source: "https://bench", Subject: benchSubject(i), Type: "io.example.placed", Data: []byte(`{}`)})
		}
		if _, err := s.Write(context.Background(), cs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d subjects written in %s", total, time.Since(start).Round(time.Millisecond))

	children := func(parent, after string, want int) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				page, _, err := s.SubjectChildren(parent, after, 100)
				if err != nil || len(page) != want {
					b.Fatalf("%d children, %v", len(page), err)
				}
			}
		}
	}
	b.Run("children/root", children("/", "", 2))
	b.Run("children/tenants-first-page", children("/tenants", "", 100))
	b.Run("children/tenants-later-page", children("/tenants", "/tenants/500", 100))
	b.Run("children/flat-first-page", children("/flat", "", 100))
	b.Run("children/flat-later-page", children("/flat", "/flat/5000", 100))
	b.Run("children/orders", children("/tenants/500/orders", "", 100))

	search := func(contains string, want int, complete bool) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				m, err := s.SearchSubjects("/", contains, "", 100, 50*time.Millisecond)
				if err != nil || len(m.Subjects) < want || m.Complete != complete {
					b.Fatalf("%d matches, complete %v, %v", len(m.Subjects), m.Complete, err)
				}
			}
		}
	}
	b.Run("search/frequent-first-page", search("42", 100, false))
	b.Run("search/rare-one-page", search("needle", 0, false))
	b.Run("search/prefix", search("/tenants/500/orders/1", 100, false))
	b.Run("search/rare-complete", func(b *testing.B) {
		for b.Loop() {
			var found, pages int
			for after := ""; ; pages++ {
				m, err := s.SearchSubjects("/", "needle", after, 100, 50*time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				found += len(m.Subjects)
				if m.Complete {
					break
				}
				after = m.Next
			}
			if found != 3 {
				b.Fatalf("%d matches of needle, want 3", found)
			}
			b.ReportMetric(float64(pages+1), "pages")
		}
	})
}
