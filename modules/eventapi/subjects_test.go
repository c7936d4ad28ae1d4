package eventapi

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// subjectsAPI returns an API over a store with events on subjects.
func subjectsAPI(t *testing.T, subjects ...string) (*API, *store.Store) {
	t.Helper()
	s := storetest.Start(t, storetest.Pebble.New(t))
	var cs []event.Candidate
	for _, subject := range subjects {
		cs = append(cs, storetest.Candidate(subject, storetest.Lib+"x", `{}`))
	}
	if _, err := s.Write(context.Background(), cs, nil); err != nil {
		t.Fatal(err)
	}
	m, _ := NewMetrics(prometheus.NewRegistry())
	return New(s, event.NewEmitter(nil), envelope.NewBuilder(), m, zap.NewNop(), Options{MaxEventSize: 1 << 20}), s
}

func TestSubjectRoutes(t *testing.T) {
	api, _ := subjectsAPI(t, "/books/42", "/books/42/notes", "/books/7", "/readers/jane/loans", "/Books")
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"root", ReadSubjectChildrenPath, `{"subject":"/"}`, 200,
			`{"children":[{"subject":"/Books","hasEvents":true,"hasChildren":false},{"subject":"/books","hasEvents":false,"hasChildren":true},{"subject":"/readers","hasEvents":false,"hasChildren":true}],"next":null}`},
		{"a page", ReadSubjectChildrenPath, `{"subject":"/","limit":1,"after":"/Books"}`, 200,
			`{"children":[{"subject":"/books","hasEvents":false,"hasChildren":true}],"next":"/books"}`},
		{"events and children", ReadSubjectChildrenPath, `{"subject":"/books"}`, 200,
			`{"children":[{"subject":"/books/42","hasEvents":true,"hasChildren":true},{"subject":"/books/7","hasEvents":true,"hasChildren":false}],"next":null}`},
		{"no children", ReadSubjectChildrenPath, `{"subject":"/authors","after":null,"limit":null}`, 200, `{"children":[],"next":null}`},
		{"bad subject", ReadSubjectChildrenPath, `{"subject":"books"}`, 400, "invalid subject: 'books'"},
		{"missing subject", ReadSubjectChildrenPath, `{}`, 400, "invalid subject: ''"},
		{"bad after", ReadSubjectChildrenPath, `{"subject":"/","after":"x"}`, 400, "invalid subject: 'x'"},
		{"after not a child", ReadSubjectChildrenPath, `{"subject":"/","after":"/books/42"}`, 400, "invalid request: after '/books/42' is not a child of '/'"},
		{"limit zero", ReadSubjectChildrenPath, `{"subject":"/","limit":0}`, 400, "invalid request: limit 0 is out of range, expected 1 to 1000"},
		{"limit too big", ReadSubjectChildrenPath, `{"subject":"/","limit":1001}`, 400, "invalid request: limit 1001 is out of range, expected 1 to 1000"},
		{"limit not an integer", ReadSubjectChildrenPath, `{"subject":"/","limit":"10"}`, 400, "invalid request: malformed JSON: "},
		{"malformed", ReadSubjectChildrenPath, `{"subject":`, 400, "invalid request: malformed JSON: "},

		{"search any case", SearchSubjectsPath, `{"baseSubject":"/","contains":"BOOKS"}`, 200,
			`{"subjects":["/Books","/books","/books/42","/books/42/notes","/books/7"],"next":null}`},
		{"search a page", SearchSubjectsPath, `{"baseSubject":"/","contains":"4","limit":1}`, 200, `{"subjects":["/books/42"],"next":"/books/42"}`},
		{"search on", SearchSubjectsPath, `{"baseSubject":"/","contains":"4","limit":1,"after":"/books/42"}`, 200, `{"subjects":["/books/42/notes"],"next":"/books/42/notes"}`},
		{"search prefix", SearchSubjectsPath, `{"baseSubject":"/","contains":"/readers/"}`, 200, `{"subjects":["/readers/jane","/readers/jane/loans"],"next":null}`},
		{"search nothing", SearchSubjectsPath, `{"baseSubject":"/books","contains":"jane"}`, 200, `{"subjects":[],"next":null}`},
		{"search bad base", SearchSubjectsPath, `{"contains":"x"}`, 400, "invalid subject: ''"},
		{"search after outside", SearchSubjectsPath, `{"baseSubject":"/books","after":"/readers"}`, 400, "invalid request: after '/readers' is not within '/books'"},
		{"search long text", SearchSubjectsPath, `{"baseSubject":"/","contains":"` + strings.Repeat("x", 1025) + `"}`, 400, "invalid request: contains exceeds the limit of 1024 bytes"},
		{"search limit", SearchSubjectsPath, `{"baseSubject":"/","limit":-1}`, 400, "invalid request: limit -1 is out of range, expected 1 to 1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", c.path, strings.NewReader(c.body))
			if c.path == ReadSubjectChildrenPath {
				api.readSubjectChildren(rec, req)
			} else {
				api.searchSubjects(rec, req)
			}
			got := strings.TrimSuffix(rec.Body.String(), "\n")
			if rec.Code != c.status || !strings.HasPrefix(got, c.want) || c.status == 200 && got != c.want {
				t.Errorf("%s %s: %d %s\nwant %d %s", c.path, c.body, rec.Code, got, c.status, c.want)
			}
			if ct := rec.Header().Get("Content-Type"); c.status == 200 && ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// TestSubjectRoutesWithScopedGrants checks that a token lists only the
// subjects under its read prefixes, and pages on past those it may not
// read.
func TestSubjectRoutesWithScopedGrants(t *testing.T) {
	_, s := subjectsAPI(t, "/a/1", "/a/2", "/orders/1", "/orders/2/lines", "/ordersx/1", "/z/1")
	g := auth.Grants{Read: []string{"/orders", "/z/1"}}
	deadline := time.Now().Add(time.Minute)
	for _, c := range []struct {
		parent, after string
		limit         int
		want          string
		next          string
	}{
		{"/", "", 100, "/orders", ""},
		{"/", "", 1, "/orders", "/orders"},
		{"/orders", "", 100, "/orders/1 /orders/2", ""},
		{"/a", "", 100, "", ""},
		{"/z", "", 100, "/z/1", ""},
	} {
		children, next, err := readableChildren(s, g, subjectChildrenRequest{parent: c.parent, after: c.after, limit: c.limit}, deadline)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, child := range children {
			got = append(got, child.Subject)
		}
		gotNext := ""
		if next != nil {
			gotNext = *next
		}
		if strings.Join(got, " ") != c.want || gotNext != c.next {
			t.Errorf("children of %s after %q: %v next %q, want %q next %q", c.parent, c.after, got, gotNext, c.want, c.next)
		}
	}
	for _, c := range []struct{ base, contains, want string }{
		{"/", "1", "/orders/1 /z/1"},
		{"/", "orders", "/orders /orders/1 /orders/2 /orders/2/lines"},
		{"/a", "", ""},
		{"/", "/ordersx", ""},
	} {
		matches, next, err := readableMatches(s, g, searchSubjectsRequest{base: c.base, contains: c.contains, limit: 100}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(matches, " ") != c.want || next != nil {
			t.Errorf("search %q in %s: %v next %v, want %q", c.contains, c.base, matches, next, c.want)
		}
	}
}
