package eventql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/eventstore-service/eventstore/modules/eventql"
	"github.com/eventstore-service/eventstore/modules/eventql/eventqltest"
)

// maxTestStack is the goroutine stack the limit tests allow every stage:
// far more than a query within the limits needs (see eventql.MaxNesting),
// and far less than a recursion per term of a long chain would take.
const maxTestStack = 64 << 20

// guardStack makes a goroutine stack beyond maxTestStack crash the test
// binary for the rest of the test.
func guardStack(t testing.TB) {
	old := debug.SetMaxStack(maxTestStack)
	t.Cleanup(func() { debug.SetMaxStack(old) })
}

// nest returns open n times, then atom, then close n times.
func nest(open, atom, close string, n int) string {
	return strings.Repeat(open, n) + atom + strings.Repeat(close, n)
}

const (
	// long is the length of chains just within MaxTokens after where0.
	long = 49_000
	// huge is the length of the chains of eventstore issue 12, which
	// crashed the process.
	huge = 200_000
)

var (
	tooLong = fmt.Sprintf("static: query longer than %d tokens", eventql.MaxTokens)
	tooDeep = fmt.Sprintf("static: nesting deeper than %d levels", eventql.MaxNesting)
)

// TestLongChains runs operator chains, field paths and AS chains up to the
// token limit: they are loops, not recursions, in every stage, so they
// give their results; longer ones are a static error.
func TestLongChains(t *testing.T) {
	guardStack(t)
	db := libraryDB(t)
	checkCases(t, db, []specCase{
		{where0 + nest("1 + ", "1", "", long-1), fmt.Sprintf("[%d]", long)},
		{where0 + nest("1 + ", "1", "", huge-1), tooLong},
		{where0 + fmt.Sprint(long) + strings.Repeat(" - 1", long-1), `[1]`},
		{where0 + "3" + strings.Repeat(" * 2 / 2", long/2), `[3]`},
		{where0 + nest("true AND ", "true", "", long-1), `[true]`},
		{where0 + nest("true AND ", "true", "", huge-1), tooLong},
		{where0 + nest("false OR ", "true", "", long-1), `[true]`},
		{where0 + nest("false OR ", "true", "", huge-1), tooLong},
		{where0 + nest("true XOR ", "true", "", long-1), `[false]`},
		{where0 + nest("1 == 1 AND ", "true", "", long/4), `[true]`},
		{where0 + nest("1 == ", "1", "", long-1), `static: 1:56: comparisons do not chain`},
		{where0 + nest("1 == ", "1", "", huge-1), tooLong},
		{where0 + "e.data" + strings.Repeat(".title", long-1), `[null]`},
		{where0 + "e.data" + strings.Repeat(".title", huge-1), tooLong},
		{where0 + "1" + strings.Repeat(" AS STRING AS INT", long/3), `[1]`},
		{where0 + "1" + strings.Repeat(" AS STRING AS INT", huge/3), tooLong},
		{where0 + "[" + nest("1, ", "1", "", long-1) + "] CONTAINS 2", `[false]`},
		{where0 + "[" + nest("1, ", "1", "", huge-1) + "] CONTAINS 2", tooLong},
	})

	p, err := eventql.Compile(where0 + nest("true AND ", "true", "", long-1))
	if err != nil {
		t.Fatal(err)
	}
	if holds, err := p.Holds(context.Background(), db, eventql.Options{MemoryLimit: 1 << 20}); !holds || err != nil {
		t.Fatalf("a long AND chain as a precondition: holds %v, error %v", holds, err)
	}
}

// TestDeepNesting runs nesting up to MaxNesting, and past it: every
// construct the stages recurse on counts, however it is written.
func TestDeepNesting(t *testing.T) {
	guardStack(t)
	const n = eventql.MaxNesting
	// Each FROM after the first nests a loop; the last one's subquery is
	// one level deeper again.
	froms := func(count int) string {
		var b strings.Builder
		for i := range count {
			fmt.Fprintf(&b, "FROM a%d IN (FROM x IN events TOP 1 PROJECT INTO 1) ", i)
		}
		return b.String()
	}
	checkCases(t, libraryDB(t), []specCase{
		{where0 + nest("(", "1", ")", n), `[1]`},
		{where0 + nest("(", "1", ")", n+1), tooDeep},
		{where0 + nest("(", "1", ")", long), tooDeep},
		{where0 + nest("(", "1", ")", huge), tooLong},
		{where0 + nest("-", "1", "", n), `[1]`},
		{where0 + nest("- ", "1", "", n+1), tooDeep},
		{where0 + nest("- ", "1", "", long), tooDeep},
		{where0 + nest("- ", "1", "", huge), tooLong},
		{where0 + nest("NOT ", "true", "", n), `[true]`},
		{where0 + nest("NOT ", "true", "", long), tooDeep},
		{where0 + nest("NOT ", "true", "", huge), tooLong},
		{where0 + nest("ABS(", "-1", ")", n-1), `[1]`},
		{where0 + nest("ABS(", "-1", ")", n), tooDeep},
		{where0 + nest("ABS(", "-1", ")", huge), tooLong},
		{where0 + nest("[", "1", "]", n), nest("[", "1", "]", n+1)},
		{where0 + nest("{a: ", "1", "}", n+1), tooDeep},
		{where0 + nest("(1 + ", "1", ") * 1", n), fmt.Sprintf("[%d]", n+1)},
		{where0 + nest("(true AND ", "true", ") OR false", n+1), tooDeep},
		{nest("FROM e IN (", "FROM e IN events PROJECT INTO 1", ") PROJECT INTO e", n), `[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]`},
		{nest("FROM e IN (", "FROM e IN events PROJECT INTO 1", ") PROJECT INTO e", n+1), tooDeep},
		{froms(n) + "PROJECT INTO a0 + a" + fmt.Sprint(n-1), `[2]`},
		{froms(n+1) + "PROJECT INTO a0", tooDeep},
	})
}

// TestTurnOnlyForHeavyRuns: a run calls Options.Turn once, after its first
// 1,000 tuples; a run that reads fewer never does, and the turn's error
// ends the run.
func TestTurnOnlyForHeavyRuns(t *testing.T) {
	var candidates []eventqltest.Candidate
	for i := range 2_500 {
		eventType := "io.x.light"
		if i%100 != 0 {
			eventType = "io.x.heavy"
		}
		candidates = append(candidates, eventqltest.Candidate{Source: "https://x", Subject: "/s", Type: eventType, Data: json.RawMessage(`{}`)})
	}
	db, err := eventqltest.NewMemDB(candidates)
	if err != nil {
		t.Fatal(err)
	}
	run := func(query string, turn func() error) error {
		t.Helper()
		p, err := eventql.Compile(query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Run(context.Background(), db, eventql.Options{Turn: turn}, func(eventql.Value) error { return nil })
		return err
	}
	turns := 0
	count := func() error { turns++; return nil }
	if err := run(`FROM e IN events WHERE e.type == "io.x.light" PROJECT INTO COUNT()`, count); err != nil || turns != 0 {
		t.Fatalf("a run of 25 events: %v, %d turns", err, turns)
	}
	if err := run(`FROM e IN events WHERE e.type == "io.x.heavy" PROJECT INTO COUNT()`, count); err != nil || turns != 1 {
		t.Fatalf("a run of 2,475 events: %v, %d turns", err, turns)
	}
	refused := errors.New("no turn")
	if err := run(`FROM e IN events PROJECT INTO COUNT()`, func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a run refused its turn: %v", err)
	}
}
