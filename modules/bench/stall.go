package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// heavyCondition is a query precondition that scans every event and tests
// its data: slow on a large store, and not affected by the events the write
// scenarios write (their amounts are never negative).
const heavyCondition = `FROM e IN events WHERE e.data.amount < 0 PROJECT INTO COUNT() == 0`

// conflictingCondition scans every event of the type the write scenarios
// write: each of their writes affects it, so under them its verdicts go
// stale before the writer sees them, round after round.
var conflictingCondition = `FROM e IN events WHERE e.type == "` + EventType + `" PROJECT INTO COUNT() >= 0`

// HeavyPreconditions runs clients that each write one event per request
// guarded by the query precondition condition, for duration.
func (t Target) HeavyPreconditions(ctx context.Context, name, condition string, clients int, duration time.Duration) Result {
	client := newClient(clients)
	run := time.Now().UnixNano()
	query, err := json.Marshal(condition)
	if err != nil {
		panic(err) // a string always marshals
	}
	return load(ctx, name, client, clients, 1, duration, func(c int) exchange {
		events := writeBody(fmt.Sprintf("/bench/heavy/%d/client-%d", run, c), EventType, 1)
		body := append(events[:len(events)-1:len(events)-1],
			`,"preconditions":[{"type":"isEventQlQueryTrue","payload":{"query":`+string(query)+`}}]}`...)
		return func(ctx context.Context) error {
			return t.call(ctx, client, "/api/v1/write-events", body, nil)
		}
	})
}

// runStall measures what heavy query preconditions do to plain writes:
// the write scenario alone, then beside clients writing under a full-scan
// precondition that the plain writes do not affect, then beside clients
// whose full-scan precondition every plain write affects (its write goes
// round until its time limit), and prints the ratios of the plain writes'
// p99.
func (r *runner) runStall() error {
	o := r.opts
	const heavyClients = 4
	if total, err := r.target.Count(r.ctx); err == nil && total < 200_000 {
		if err := r.target.Fill(r.ctx, fmt.Sprintf("/bench/stall/%d", time.Now().UnixNano()), int(200_000-total)); err != nil {
			return err
		}
	}
	alone := r.measure("stall-plain", r.server, func() Result {
		return r.target.Write(r.ctx, fmt.Sprintf("write 1/request x%d alone", o.Clients), EventType, o.Clients, 1, o.Duration)
	})
	for _, phase := range []struct{ key, name, condition, ratio string }{
		{"stall-beside", "full-scan precondition", heavyCondition, "heavy preconditions"},
		{"stall-conflict", "conflicting full-scan precondition", conflictingCondition, "conflicting preconditions"},
	} {
		var heavy Result
		beside := r.measure(phase.key, r.server, func() Result {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				heavy = r.target.HeavyPreconditions(r.ctx, fmt.Sprintf("%s x%d", phase.name, heavyClients), phase.condition, heavyClients, o.Duration)
			}()
			res := r.target.Write(r.ctx, fmt.Sprintf("write 1/request x%d beside", o.Clients), EventType, o.Clients, 1, o.Duration)
			wg.Wait()
			return res
		})
		fmt.Fprintln(r.out, heavy)
		fmt.Fprintf(r.out, "%-28s plain writes' p99 beside %s / alone: %.2f\n", "", phase.ratio, beside.LatencyP99Ms/alone.LatencyP99Ms)
	}
	return nil
}
