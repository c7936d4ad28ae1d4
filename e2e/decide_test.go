package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	goclient "github.com/eventstore-service/eventstore/modules/consumer"
)

// TestGoClientDecides runs the Go client's Decide as ExampleClient_Decide
// does, for 24 students at once on two courses of 5 places, against one
// Pebble node and three PostgreSQL nodes: each course takes exactly 5,
// every other student is told it is full, and the decision's read and
// condition load the course's events only, through the data index.
func TestGoClientDecides(t *testing.T) { eachTarget(t, testGoClientDecides) }

func testGoClientDecides(t *testing.T, start starter) {
	const places, students = 5, 24
	inst := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := goclient.NewClient(inst.URL("http"), harness.Token, nil)
	if _, err := setup.RegisterDataIndex(ctx, goclient.DataIndex{Name: "tags", Path: "/tags", EventTypes: []string{"io.example.enrolled"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		indexes, err := setup.DataIndexes(ctx)
		return err == nil && len(indexes) == 1 && indexes[0].State == "ready"
	})
	boundary := func(course string) string {
		return fmt.Sprintf(`e.type == "io.example.enrolled" AND e.data.tags CONTAINS "course:%s"`, course)
	}
	errFull := errors.New("the course is full")
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		enrolled = map[string]int{}
		full     int
		failures []error
	)
	for s := range students {
		wg.Add(1)
		go func() {
			defer wg.Done()
			course := []string{"c1", "c2"}[s%2]
			client := goclient.NewClient(inst.URL("http"), harness.Token, nil) // each a node of its own
			_, err := client.Decide(ctx, boundary(course), func(enrolments []goclient.Event) ([]goclient.EventCandidate, error) {
				if len(enrolments) >= places {
					return nil, errFull
				}
				student := fmt.Sprintf("student:%d", s)
				return []goclient.EventCandidate{{Source: "https://school.example", Subject: "/students/" + fmt.Sprint(s), Type: "io.example.enrolled",
					Data: map[string][]string{"tags": {"course:" + course, student}}}}, nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errFull):
				full++
			case err != nil:
				failures = append(failures, err)
			default:
				enrolled[course]++
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 || enrolled["c1"] != places || enrolled["c2"] != places || full != students-2*places {
		t.Fatalf("enrolled %v, %d told full, failures %v", enrolled, full, failures)
	}
	// Stored as decided; and the condition Decide writes loads only the
	// course's events (the write's own condition, run as a query).
	const counter = `eventstore_events_read_total{operation="run-eventql-query"}`
	for _, course := range []string{"c1", "c2"} {
		res := runQuery(t, inst, "FROM e IN events WHERE "+boundary(course)+" PROJECT INTO COUNT()")
		if res.status != 200 || len(res.rows) != 1 || res.rows[0] != float64(places) {
			t.Fatalf("enrolments of %s stored: %+v", course, res)
		}
		node := inst.Nodes()[0]
		before := metrics(t, node)[counter]
		condition := fmt.Sprintf("FROM e IN events WHERE (%s) AND (e.id AS INT + 1) > 1 PROJECT INTO COUNT() == 0", boundary(course))
		if res := runQuery(t, node, condition); res.status != 200 || len(res.rows) != 1 {
			t.Fatalf("%s: %+v", condition, res)
		}
		if loaded := metrics(t, node)[counter] - before; loaded > places {
			t.Fatalf("the condition of a decision on %s loaded %v events, want at most its %d", course, loaded, places)
		}
	}
}
