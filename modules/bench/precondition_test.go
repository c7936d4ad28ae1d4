package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeStore answers write-events with preconditions and read-events of a
// subject's latest event as docs/api.md §4.3 and §4.4 say, keeping only the latest id of
// every subject.
type fakeStore struct {
	mu       sync.Mutex
	next     int
	latest   map[string]int
	refused  int // 409s
	lose     int // the lose-th write is committed but answered 500
	written  int
	rereads  int
	problems []string
}

func (f *fakeStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/v1/write-events":
		var body struct {
			Events []struct {
				Subject string `json:"subject"`
			} `json:"events"`
			Preconditions []struct {
				Type    string `json:"type"`
				Payload struct {
					Subject string `json:"subject"`
					EventID string `json:"eventId"`
				} `json:"payload"`
			} `json:"preconditions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Events) != 1 || len(body.Preconditions) != 1 {
			f.problems = append(f.problems, fmt.Sprintf("body %+v, %v", body, err))
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		p := body.Preconditions[0]
		latest, populated := f.latest[p.Payload.Subject]
		holds := p.Payload.Subject == body.Events[0].Subject &&
			(p.Type == "isSubjectPristine" && !populated || p.Type == "isSubjectOnEventId" && populated && p.Payload.EventID == strconv.Itoa(latest))
		if !holds {
			f.refused++
			http.Error(w, "state conflict: precondition failed", http.StatusConflict)
			return
		}
		id := f.next
		f.next++
		f.latest[p.Payload.Subject] = id
		f.written++
		if f.written == f.lose {
			http.Error(w, "lost", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, `[{"subject":%q,"type":"t","id":"%d","data":{}}]`, p.Payload.Subject, id)
	case "/api/v1/read-events":
		var body struct {
			Subject string `json:"subject"`
			Options struct {
				Order string `json:"order"`
			} `json:"options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Options.Order != "antichronological" {
			f.problems = append(f.problems, "read-events in order "+body.Options.Order)
		}
		f.rereads++
		if id, ok := f.latest[body.Subject]; ok {
			fmt.Fprintf(w, "{\"type\":\"event\",\"payload\":{\"subject\":%q,\"id\":\"%d\"}}\n", body.Subject, id)
			fmt.Fprintf(w, "{\"type\":\"event\",\"payload\":{\"subject\":%q,\"id\":\"%d\"}}\n", body.Subject, id-1)
		}
	default:
		http.NotFound(w, r)
	}
}

func runPreconditions(t *testing.T, f *fakeStore) Result {
	t.Helper()
	srv := httptest.NewServer(f)
	defer srv.Close()
	res := Target{URL: srv.URL, Token: "t"}.WritePrecondition(context.Background(), "precondition", 4, 300*time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.problems) > 0 {
		t.Fatalf("the fake store saw: %v", f.problems)
	}
	if f.refused != 0 {
		t.Fatalf("%d writes refused", f.refused)
	}
	return res
}

func TestWritePrecondition(t *testing.T) {
	f := &fakeStore{latest: map[string]int{}}
	res := runPreconditions(t, f)
	// Up to one write per client is committed but cut off by the end.
	if cut := int64(f.written) - res.Requests; res.Errors != 0 || res.Requests < 4 || cut < 0 || cut > 4 || res.Events != res.Requests || len(f.latest) != 4 || f.rereads != 0 {
		t.Fatalf("result %d requests %d errors; store %d written on %d subjects, %d re-reads", res.Requests, res.Errors, f.written, len(f.latest), f.rereads)
	}
}

func TestWritePreconditionRecovers(t *testing.T) {
	// A write committed but answered 500: its client reads the latest id
	// again and goes on without a conflict.
	f := &fakeStore{latest: map[string]int{}, lose: 9}
	res := runPreconditions(t, f)
	if cut := int64(f.written-1) - res.Requests; res.Errors != 1 || cut < 0 || cut > 4 || f.rereads != 1 || f.written < 20 {
		t.Fatalf("result %d requests %d errors; store %d written, %d re-reads", res.Requests, res.Errors, f.written, f.rereads)
	}
}

func TestPreconditionBody(t *testing.T) {
	events := writeBody("/s", EventType, 1)
	events = events[:len(events)-1]
	for latest, want := range map[string]string{
		"":   `"preconditions":[{"type":"isSubjectPristine","payload":{"subject":"/s"}}]}`,
		"42": `"preconditions":[{"type":"isSubjectOnEventId","payload":{"subject":"/s","eventId":"42"}}]}`,
	} {
		body := preconditionBody(events, "/s", latest)
		var decoded map[string]any
		if err := json.Unmarshal(body, &decoded); err != nil || string(body[len(events)+1:]) != want {
			t.Errorf("latest %q: %s (%v)", latest, body, err)
		}
	}
}
