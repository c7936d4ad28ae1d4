package storetest

import (
	"context"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Lib is the prefix of the event types of Library.
const Lib = "com.example.library."

// Candidate returns an event of subject and type with data, from the
// library's source.
func Candidate(subject, eventType string, data string) event.Candidate {
	return event.Candidate{Source: "https://library.example.com", Subject: subject, Type: eventType, Data: []byte(data)}
}

// Write writes cs to s without preconditions and fails the test on an error.
func Write(t testing.TB, s *store.Store, cs ...event.Candidate) []event.Record {
	t.Helper()
	records, err := s.Write(context.Background(), cs, nil)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	return records
}

// Library starts a store on b holding the seven events of the library of
// docs/api.md §5 (ids 0 to 6), of the types Lib plus book-acquired,
// book-borrowed, book-returned, reader-registered and note-added.
func Library(t *testing.T, b Backend) *store.Store {
	s := Start(t, b.New(t))
	for _, e := range [][2]string{
		{"/books/42", "book-acquired"}, {"/books/42", "book-borrowed"}, {"/books/7", "book-acquired"},
		{"/books/42", "book-returned"}, {"/readers/jane", "reader-registered"}, {"/books/42/notes", "note-added"},
		{"/books/42", "book-borrowed"},
	} {
		Write(t, s, Candidate(e[0], Lib+e[1], `{}`))
	}
	return s
}
