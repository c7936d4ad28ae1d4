package eventapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/eventql"
)

// TestConditionPacesOnlyItsRun builds a precondition, lets it wait as it
// would for its turn among the evaluations, and then evaluates it over
// 3,000 events: the wait is no work, and the pacer must not sleep it off
// (it slept half of it, holding the turn, so that a queue of deciders
// grew its own waits).
func TestConditionPacesOnlyItsRun(t *testing.T) {
	subjects := make([]string, 3000)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("/paced/%d", i)
	}
	a, s := subjectsAPI(t, subjects...)
	program, err := eventql.Compile(`FROM e IN events PROJECT INTO COUNT() >= 0`)
	if err != nil {
		t.Fatal(err)
	}
	cond := a.condition(program)
	const waited = time.Second
	time.Sleep(waited)
	start := time.Now()
	if holds, err := cond.Holds(context.Background(), s.View()); err != nil || !holds {
		t.Fatalf("holds %v, %v", holds, err)
	}
	if took := time.Since(start); took >= waited/2 {
		t.Fatalf("the evaluation took %v after a wait of %v: it slept off the wait", took, waited)
	}
}
