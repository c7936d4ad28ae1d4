package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// treeSubjects are the subjects with events of the stores of the subject
// tree tests: implicit ones (/a, /x, /x/y, /books, /readers), one with
// events and children (/books/42), and siblings whose string order is not
// their tree order (/a/c before /a-b, /X before /a).
var treeSubjects = []string{
	"/books/42", "/books/7", "/books/42/notes", "/readers/jane",
	"/a-b", "/a/c", "/b", "/x/y/z", "/X/Q", "/X",
}

func treeStore(t *testing.T, b storetest.Backend) *store.Store {
	t.Helper()
	s := storetest.Start(t, b.New(t))
	var cs []event.Candidate
	for _, subject := range treeSubjects {
		cs = append(cs, candidate(subject, lib+"x", `{}`), candidate(subject, lib+"y", `{}`))
	}
	write(t, s, cs...)
	return s
}

// listSubjects returns Subjects(base).
func listSubjects(t *testing.T, s *store.Store, base string) []string {
	t.Helper()
	it := s.Subjects(base)
	var out []string
	for it.Next() {
		out = append(out, it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// childrenText formats children as "subject[e][c]" words: e has events,
// c has children.
func childrenText(children []store.SubjectChild) string {
	var words []string
	for _, c := range children {
		w := c.Subject
		if c.HasEvents {
			w += "e"
		}
		if c.HasChildren {
			w += "c"
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

func TestSubjectChildren(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := treeStore(t, b)
		for _, c := range []struct {
			name, parent, after string
			limit               int
			want                string
			more                bool
		}{
			{"root", "/", "", 100, "/Xec /ac /a-be /be /booksc /readersc /xc", false},
			{"first page", "/", "", 3, "/Xec /ac /a-be", true},
			{"second page", "/", "/a-b", 3, "/be /booksc /readersc", true},
			{"last page", "/", "/readers", 3, "/xc", false},
			{"after the last", "/", "/x", 3, "", false},
			{"after a missing child", "/", "/bo", 100, "/booksc /readersc /xc", false},
			{"after a deeper subject", "/", "/books/42/notes", 100, "/readersc /xc", false},
			{"events and children", "/books", "", 100, "/books/42ec /books/7e", false},
			{"implicit chain", "/x", "", 100, "/x/yc", false},
			{"implicit child of implicit", "/x/y", "", 100, "/x/y/ze", false},
			{"leaf", "/b", "", 100, "", false},
			{"nothing within", "/authors", "", 100, "", false},
			{"string prefix is not a parent", "/book", "", 100, "", false},
			{"limit one", "/books", "", 1, "/books/42ec", true},
		} {
			t.Run(c.name, func(t *testing.T) {
				children, more, err := s.SubjectChildren(c.parent, c.after, c.limit)
				if err != nil {
					t.Fatal(err)
				}
				if got := childrenText(children); got != c.want || more != c.more {
					t.Errorf("SubjectChildren(%q, %q, %d) = %q, more %v; want %q, more %v", c.parent, c.after, c.limit, got, more, c.want, c.more)
				}
			})
		}
		for _, bad := range [][2]string{{"/books", "/books"}, {"/books", "/readers/jane"}} {
			if _, _, err := s.SubjectChildren(bad[0], bad[1], 10); err == nil {
				t.Errorf("SubjectChildren(%q, %q) did not fail", bad[0], bad[1])
			}
		}
		if _, _, err := s.SubjectChildren("/", "", 0); err == nil {
			t.Errorf("SubjectChildren with limit 0 did not fail")
		}
	})
}

// TestSubjectChildrenModel compares SubjectChildren, a page at a time,
// with the children read-subjects lists, for every subject of a tree.
func TestSubjectChildrenModel(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := storetest.Start(t, b.New(t))
		var cs []event.Candidate
		for i := range 60 {
			// Deep and shallow, siblings of one character and of several.
			subject := fmt.Sprintf("/t%d/o%d", i%3, i%7)
			if i%4 == 0 {
				subject += fmt.Sprintf("/l%d", i%5)
			}
			if i%9 == 0 {
				subject = fmt.Sprintf("/t%d", i%3)
			}
			cs = append(cs, candidate(subject, lib+"x", `{}`))
		}
		write(t, s, cs...)
		listed := listSubjects(t, s, "/")
		hasEvents := map[string]bool{}
		for _, c := range cs {
			hasEvents[c.Subject] = true
		}
		for _, parent := range listed {
			var want []store.SubjectChild
			for _, subject := range listed {
				if subject != "/" && subject != parent && parentOf(subject) == parent {
					hasChildren := false
					for _, other := range listed {
						hasChildren = hasChildren || strings.HasPrefix(other, subject+"/")
					}
					want = append(want, store.SubjectChild{Subject: subject, HasEvents: hasEvents[subject], HasChildren: hasChildren})
				}
			}
			for limit := 1; limit <= 3; limit++ {
				var got []store.SubjectChild
				after := ""
				for pages := 0; ; pages++ {
					page, more, err := s.SubjectChildren(parent, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit || more && len(page) < limit || pages > len(want) {
						t.Fatalf("children of %s, limit %d: page %v, more %v", parent, limit, page, more)
					}
					got = append(got, page...)
					if !more {
						break
					}
					after = page[len(page)-1].Subject
				}
				if childrenText(got) != childrenText(want) {
					t.Errorf("children of %s, limit %d: %q, want %q", parent, limit, childrenText(got), childrenText(want))
				}
			}
		}
	})
}

func parentOf(subject string) string {
	i := strings.LastIndexByte(subject, '/')
	if i == 0 {
		return "/"
	}
	return subject[:i]
}

func TestSearchSubjects(t *testing.T) {
	storetest.Each(t, &pg, func(t *testing.T, b storetest.Backend) {
		s := treeStore(t, b)
		all := listSubjects(t, s, "/")
		for _, c := range []struct {
			name, base, contains string
			want                 string
		}{
			{"any case", "/", "x", "/X /X/Q /x /x/y /x/y/z"},
			{"implicit included", "/", "b", "/a-b /b /books /books/42 /books/42/notes /books/7"},
			{"within base", "/books", "4", "/books/42 /books/42/notes"},
			{"base itself", "/books", "books", "/books /books/42 /books/42/notes /books/7"},
			{"no match", "/", "zzz", ""},
			{"prefix", "/", "/books/4", "/books/42 /books/42/notes"},
			{"prefix of the children", "/", "/x/", "/x/y /x/y/z"},
			{"prefix is exact case", "/", "/x", "/x /x/y /x/y/z"},
			{"prefix of everything", "/", "/", strings.Join(all, " ")},
			{"prefix beyond everything", "/", "/zzz", ""},
			{"prefix outside base", "/books", "/readers", ""},
			{"nothing within base", "/authors", "a", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				m, err := s.SearchSubjects(c.base, c.contains, "", 1000, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(m.Subjects, " "); got != c.want || !m.Complete {
					t.Errorf("SearchSubjects(%q, %q) = %q, complete %v; want %q, complete", c.base, c.contains, got, m.Complete, c.want)
				}
				// A page at a time: the same matches.
				for limit := 1; limit <= 2; limit++ {
					var got []string
					after := ""
					for pages := 0; ; pages++ {
						m, err := s.SearchSubjects(c.base, c.contains, after, limit, time.Minute)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, m.Subjects...)
						if m.Complete {
							break
						}
						if m.Next == "" || pages > len(all) {
							t.Fatalf("limit %d: page %+v after %q", limit, m, after)
						}
						after = m.Next
					}
					if strings.Join(got, " ") != c.want {
						t.Errorf("SearchSubjects(%q, %q) with limit %d: %q, want %q", c.base, c.contains, limit, strings.Join(got, " "), c.want)
					}
				}
			})
		}
		// Continuing after every subject of the listing finds the matches
		// after it: implicit subjects are positions too.
		for i, after := range all {
			m, err := s.SearchSubjects("/", "/", after, 1000, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(m.Subjects, " "), strings.Join(all[i+1:], " "); got != want {
				t.Errorf("after %s: %q, want %q", after, got, want)
			}
		}
	})
}

// TestSearchSubjectsBudget checks that a search whose budget is spent
// stops and continues where it stopped.
func TestSearchSubjectsBudget(t *testing.T) {
	s := storetest.Start(t, storetest.Pebble.New(t))
	var cs []event.Candidate
	for i := range 1000 {
		cs = append(cs, candidate(fmt.Sprintf("/s/%04d", i), lib+"x", `{}`))
	}
	write(t, s, cs...)
	var got []string
	after, pages := "", 0
	for ; ; pages++ {
		m, err := s.SearchSubjects("/", "9", after, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Subjects...)
		if m.Complete {
			break
		}
		after = m.Next
	}
	want := 0
	for i := range 1000 {
		if strings.Contains(fmt.Sprintf("%04d", i), "9") {
			want++
		}
	}
	if len(got) != want || pages < 2 {
		t.Errorf("%d matches in %d pages, want %d in several", len(got), pages+1, want)
	}
}
