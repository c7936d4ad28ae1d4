package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// RaceOnPreconditions writes one event to the subject /race, then runs
// rounds in which writers, spread over nodes (stores of one log), race to
// append to it, each with isSubjectOnEventId on the event the round started
// from. It fails t unless every round has exactly one winner and every
// loser fails its precondition. The log then holds rounds+1 events.
func RaceOnPreconditions(t testing.TB, nodes []*store.Store, writers, rounds int) {
	t.Helper()
	race := func(data string) []event.Candidate {
		return []event.Candidate{{Source: "https://eventstore.test", Subject: "/race", Type: "io.example.race", Data: []byte(data)}}
	}
	first, err := nodes[0].Write(context.Background(), race(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	last := first[0].ID
	for round := 0; round < rounds; round++ {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			other   []error
		)
		expected := last
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				node := w % len(nodes)
				records, err := nodes[node].Write(context.Background(), race(fmt.Sprintf(`{"w":%d}`, w)),
					[]store.Precondition{{Kind: store.SubjectOnEventID, Subject: "/race", EventID: expected}})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, fmt.Sprintf("%d on node %d", records[0].ID, node))
					last = records[0].ID
				case !errors.Is(err, store.ErrPreconditionFailed):
					other = append(other, err)
				}
			}(w)
		}
		wg.Wait()
		if len(other) > 0 || len(winners) != 1 {
			t.Fatalf("round %d: winners %v, other errors %v", round, winners, other)
		}
	}
}
