package opsapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/eventapi"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestVerifyStoreRoute checks the wire form of verify-store: one
// verification line of exactly these keys after a valid body, 400 before
// any line for another.
func TestVerifyStoreRoute(t *testing.T) {
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, s)
	records, err := s.Write(context.Background(), []event.Candidate{
		{Source: "https://x", Subject: "/a", Type: "io.example.x", Data: []byte(`{}`)},
		{Source: "https://x", Subject: "/a/b", Type: "io.example.y", Data: []byte(`{"n":1}`)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := eventapi.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	api := eventapi.New(s, event.NewEmitter(nil), envelope.NewBuilder(), m, zap.NewNop(), eventapi.Options{})
	route := NewVerifyStoreRoute(s, api, zap.NewNop())
	serve := func(body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		route.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, VerifyStorePath, strings.NewReader(body)))
		return rec
	}

	want := `{"type":"verification","payload":{"verified":true,"events":2,"headHash":"` + records[1].Hash() + `"}}` + "\n"
	for _, body := range []string{"", "{}"} {
		rec := serve(body)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/x-ndjson" || rec.Body.String() != want {
			t.Fatalf("body %q: %d %q %q, want %q", body, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), want)
		}
	}
	if rec := serve(`"x"`); rec.Code != http.StatusBadRequest {
		t.Fatalf("a string body: %d %q", rec.Code, rec.Body.String())
	}

	failed, err := json.Marshal(verification{Events: 7, Problem: "event 7: stored hash a, recomputed b"})
	if err != nil || string(failed) != `{"verified":false,"events":7,"problem":"event 7: stored hash a, recomputed b"}` {
		t.Fatalf("a failed verification is %s (%v)", failed, err)
	}
}
