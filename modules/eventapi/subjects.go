package eventapi

import (
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Paths of the subject tree endpoints (docs/api.md §4.6a), which page
// through the tree for the console instead of streaming all of it.
const (
	ReadSubjectChildrenPath = "/api/v1/read-subject-children"
	SearchSubjectsPath      = "/api/v1/search-subjects"
)

// Limits of the subject tree endpoints.
const (
	// DefaultSubjectsLimit is the page size when a request names none.
	DefaultSubjectsLimit = 100
	// MaxSubjectsLimit is the largest page a request may ask for.
	MaxSubjectsLimit = 1000
	// MaxContainsLength bounds the text a search looks for.
	MaxContainsLength = 1024
	// SubjectsBudget is the time one request spends at most looking
	// through subjects; the page then ends and tells where to go on.
	SubjectsBudget = 50 * time.Millisecond
)

type subjectChildrenBody struct {
	Subject string `json:"subject"`
	After   string `json:"after"`
	Limit   *int   `json:"limit"`
}

type searchSubjectsBody struct {
	BaseSubject string `json:"baseSubject"`
	Contains    string `json:"contains"`
	After       string `json:"after"`
	Limit       *int   `json:"limit"`
}

// subjectChildrenRequest is a decoded read-subject-children body.
type subjectChildrenRequest struct {
	parent, after string
	limit         int
}

// searchSubjectsRequest is a decoded search-subjects body.
type searchSubjectsRequest struct {
	base, contains, after string
	limit                 int
}

// decodeSubjectChildren validates a read-subject-children body: a valid
// subject, after empty or a direct child of it, a limit within bounds.
func decodeSubjectChildren(body []byte) (subjectChildrenRequest, error) {
	var req subjectChildrenBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return subjectChildrenRequest{}, err
	}
	if !event.ValidSubject(req.Subject) {
		return subjectChildrenRequest{}, badRequest("invalid subject: %s", event.Quote(req.Subject))
	}
	if req.After != "" {
		if !event.ValidSubject(req.After) {
			return subjectChildrenRequest{}, badRequest("invalid subject: %s", event.Quote(req.After))
		}
		if req.After == req.Subject || parentOf(req.After) != req.Subject {
			return subjectChildrenRequest{}, badRequest("invalid request: after %s is not a child of %s", event.Quote(req.After), event.Quote(req.Subject))
		}
	}
	limit, err := decodeLimit(req.Limit)
	return subjectChildrenRequest{parent: req.Subject, after: req.After, limit: limit}, err
}

// decodeSearchSubjects validates a search-subjects body: a valid base
// subject, a text of at most MaxContainsLength bytes, after empty or a
// subject within the base, a limit within bounds.
func decodeSearchSubjects(body []byte) (searchSubjectsRequest, error) {
	var req searchSubjectsBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return searchSubjectsRequest{}, err
	}
	if !event.ValidSubject(req.BaseSubject) {
		return searchSubjectsRequest{}, badRequest("invalid subject: %s", event.Quote(req.BaseSubject))
	}
	if len(req.Contains) > MaxContainsLength {
		return searchSubjectsRequest{}, badRequest("invalid request: contains exceeds the limit of %d bytes", MaxContainsLength)
	}
	if req.After != "" {
		if !event.ValidSubject(req.After) {
			return searchSubjectsRequest{}, badRequest("invalid subject: %s", event.Quote(req.After))
		}
		if !store.Within(req.BaseSubject, req.After) {
			return searchSubjectsRequest{}, badRequest("invalid request: after %s is not within %s", event.Quote(req.After), event.Quote(req.BaseSubject))
		}
	}
	limit, err := decodeLimit(req.Limit)
	return searchSubjectsRequest{base: req.BaseSubject, contains: req.Contains, after: req.After, limit: limit}, err
}

// decodeLimit returns the page size of a request: DefaultSubjectsLimit
// when absent, else 1 to MaxSubjectsLimit.
func decodeLimit(limit *int) (int, error) {
	switch {
	case limit == nil:
		return DefaultSubjectsLimit, nil
	case *limit < 1 || *limit > MaxSubjectsLimit:
		return 0, badRequest("invalid request: limit %d is out of range, expected 1 to %d", *limit, MaxSubjectsLimit)
	}
	return *limit, nil
}

// parentOf returns the parent of a subject other than "/".
func parentOf(subject string) string {
	for i := len(subject) - 1; i > 0; i-- {
		if subject[i] == '/' {
			return subject[:i]
		}
	}
	return "/"
}

// wireChild is a child in a read-subject-children answer.
type wireChild struct {
	Subject     string `json:"subject"`
	HasEvents   bool   `json:"hasEvents"`
	HasChildren bool   `json:"hasChildren"`
}

// readSubjectChildren is POST /api/v1/read-subject-children: a page of
// the direct children of a subject, those the token may read.
func (a *API) readSubjectChildren(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	req, err := decodeSubjectChildren(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if a.refuseUnreachable(w) {
		return
	}
	children, next, err := readableChildren(a.store, auth.GrantsOf(r.Context()), req, time.Now().Add(SubjectsBudget))
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	out := struct {
		Children []wireChild `json:"children"`
		Next     *string     `json:"next"`
	}{Children: make([]wireChild, len(children)), Next: next}
	for i, c := range children {
		out.Children[i] = wireChild{Subject: c.Subject, HasEvents: c.HasEvents, HasChildren: c.HasChildren}
	}
	httpkit.WriteJSON(w, out)
}

// readableChildren returns the children of req that g may read, page
// after page of the store until req.limit of them or the deadline, and
// the child to continue after (nil: none follow).
func readableChildren(s *store.Store, g auth.Grants, req subjectChildrenRequest, deadline time.Time) ([]store.SubjectChild, *string, error) {
	if !mayListBelow(g, req.parent) {
		return nil, nil, nil
	}
	var out []store.SubjectChild
	after := req.after
	for {
		page, more, err := s.SubjectChildren(req.parent, after, req.limit-len(out))
		if err != nil {
			return nil, nil, err
		}
		for _, c := range page {
			if g.CanRead(c.Subject) {
				out = append(out, c)
			}
		}
		if !more {
			return out, nil, nil
		}
		after = page[len(page)-1].Subject
		if len(out) == req.limit || time.Now().After(deadline) {
			return out, &after, nil
		}
	}
}

// searchSubjects is POST /api/v1/search-subjects: a page of the subjects
// within a base that contain a text, those the token may read.
func (a *API) searchSubjects(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	req, err := decodeSearchSubjects(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if a.refuseUnreachable(w) {
		return
	}
	subjects, next, err := readableMatches(a.store, auth.GrantsOf(r.Context()), req, SubjectsBudget)
	if err != nil {
		httpkit.WriteError(w, a.ReadError(err))
		return
	}
	if subjects == nil {
		subjects = []string{}
	}
	httpkit.WriteJSON(w, struct {
		Subjects []string `json:"subjects"`
		Next     *string  `json:"next"`
	}{subjects, next})
}

// readableMatches returns the matches of req that g may read, searching
// on until req.limit of them or until budget has passed, and the subject
// to continue after (nil: the search is complete).
func readableMatches(s *store.Store, g auth.Grants, req searchSubjectsRequest, budget time.Duration) ([]string, *string, error) {
	if !mayListBelow(g, req.base) {
		return nil, nil, nil
	}
	deadline := time.Now().Add(budget)
	var out []string
	after := req.after
	for {
		m, err := s.SearchSubjects(req.base, req.contains, after, req.limit-len(out), time.Until(deadline))
		if err != nil {
			return nil, nil, err
		}
		for _, subject := range m.Subjects {
			if g.CanRead(subject) {
				out = append(out, subject)
			}
		}
		if m.Complete {
			return out, nil, nil
		}
		after = m.Next
		if len(out) == req.limit || !time.Now().Before(deadline) {
			return out, &after, nil
		}
	}
}

// mayListBelow reports whether g may read subject or anything below it.
func mayListBelow(g auth.Grants, subject string) bool {
	if g.CanRead(subject) {
		return true
	}
	for _, prefix := range g.Read {
		if store.Within(subject, prefix) {
			return true
		}
	}
	return false
}
