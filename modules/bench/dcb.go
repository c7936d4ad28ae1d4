package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DecisionType is the type of the events the dcb scenario decides on:
// enrolments, tagged with the course and the student they concern, as the
// dynamic-consistency-boundary libraries tag their events.
const DecisionType = "io.eventstore.bench.enrolled"

// Boundaries is the number of courses the dcb scenario's store spreads
// its events over: a decision's boundary holds about a ten-thousandth of
// them.
const Boundaries = 10_000

// dcbClients is the number of clients of the public DCB benchmark's
// shape (unrelated appends).
const dcbClients = 20

// FillDecisions writes n events of DecisionType in batches of 1,000 with
// four clients at once, event k tagged course:<k mod Boundaries>, each on
// a subject of its student.
func (t Target) FillDecisions(ctx context.Context, n int) error {
	return t.fill(ctx, (n+999)/1000, 4, func(batch int) [][]byte {
		first := batch * 1000
		var b strings.Builder
		b.WriteString(`{"events":[`)
		for i := range min(1000, n-first) {
			if i > 0 {
				b.WriteByte(',')
			}
			k := first + i
			fmt.Fprintf(&b, `{"source":"https://bench.eventstore.example","subject":"/students/%d","type":%q,"data":{"tags":["course:%d","student:%d"]}}`,
				k/10, DecisionType, k%Boundaries, k/10)
		}
		b.WriteString(`]}`)
		return [][]byte{[]byte(b.String())}
	})
}

// Shape is what the writes of one of the dcb scenario's loads are guarded
// by. Every load writes events of DecisionType tagged with a course and
// its student, which the scenario's data index keys; the two loads of
// each ratio write the same events, so that the ratio is that of their
// preconditions alone (what the index adds to a write is measured on its
// own, docs/performance.md).
type Shape int

const (
	// ShapeDecision: client c decides on course:<c> of the store that
	// FillDecisions wrote, as the DCB libraries append: it has read its
	// boundary's last event (before the clock runs), and writes on
	// condition that no event of the boundary came after the one it knows,
	// "(e.id AS INT + 1) > <position>"; it knows its own event from then on.
	ShapeDecision Shape = iota
	// ShapeOwnSubject, the reference of ShapeDecision: client c writes on a
	// subject of its own with isSubjectOnEventId (isSubjectPristine first),
	// tagged with a course of its own that no decision reads.
	ShapeOwnSubject
	// ShapeUnrelated: each write's boundary is a tag of its own that no
	// event has yet (COUNT() == 0: the public DCB benchmark's unrelated
	// appends).
	ShapeUnrelated
	// ShapePlain, the reference of ShapeUnrelated: its events without a
	// precondition.
	ShapePlain
)

// Decide prepares clients that each write one event of DecisionType per
// request, guarded as shape says: ShapeDecision's clients read their
// boundaries here. The load it returns runs them for its duration and
// returns the result; a failed precondition is an error. Only the load is
// timed (and its server's CPU measured, runPaired), not the reads.
func (t Target) Decide(ctx context.Context, name string, clients int, shape Shape) func(time.Duration) Result {
	client := newClient(clients)
	run := time.Now().UnixNano()
	lasts := make([]int64, clients) // the last event of each client's boundary: its reads, before the clock runs
	for c := range lasts {
		if shape != ShapeDecision {
			break
		}
		var err error
		if lasts[c], err = t.lastOf(ctx, client, fmt.Sprintf("course:%d", c%Boundaries)); err != nil {
			return func(time.Duration) Result {
				return Result{Name: name, Errors: 1, Failures: map[string]int64{err.Error(): 1}}
			}
		}
	}
	return func(duration time.Duration) Result {
		return t.decide(ctx, name, client, clients, shape, run, lasts, duration)
	}
}

// decide is the load of Decide: clients writing for duration, those of
// ShapeDecision from the last events lasts of their boundaries.
func (t Target) decide(ctx context.Context, name string, client *http.Client, clients int, shape Shape, run int64, lasts []int64, duration time.Duration) Result {
	return load(ctx, name, client, clients, 1, duration, func(c int) exchange {
		n := 0
		student := fmt.Sprintf("/students/bench-%d", c)
		last := lasts[c] // ShapeDecision: the boundary's last event as this client knows it, -1: none
		own := fmt.Sprintf("/students/bench-%d-%d", run, c)
		latest := "" // ShapeOwnSubject: the id of own's latest event; "" while it has none
		var answer bytes.Buffer
		return func(ctx context.Context) error {
			answer.Reset()
			switch shape {
			case ShapeUnrelated, ShapePlain:
				tag := fmt.Sprintf("course:%d-%d-%d", run, c, n)
				n++
				precondition := ""
				if shape == ShapeUnrelated {
					precondition = queryPrecondition(tag, "", "COUNT() == 0")
				}
				return t.call(ctx, client, "/api/v1/write-events", decisionBody(c, student, tag, precondition), nil)
			case ShapeOwnSubject:
				body := decisionBody(c, own, fmt.Sprintf("course:own-%d", c), subjectPrecondition(own, latest))
				if err := t.call(ctx, client, "/api/v1/write-events", body, &answer); err != nil {
					return err
				}
			default:
				tag := fmt.Sprintf("course:%d", c%Boundaries)
				after := fmt.Sprintf("(e.id AS INT + 1) > %d", last+1)
				body := decisionBody(c, student, tag, queryPrecondition(tag, after, "COUNT() == 0"))
				if err := t.call(ctx, client, "/api/v1/write-events", body, &answer); err != nil {
					return err
				}
			}
			id, ok := eventID(answer.Bytes())
			if !ok {
				return fmt.Errorf("no event id in the answer %.200q", answer.Bytes())
			}
			last, latest = int64(id), strconv.FormatUint(id, 10)
			return nil
		}
	})
}

// lastOf returns the id of the last event of DecisionType tagged tag, -1
// when there is none: the read of a decision.
func (t Target) lastOf(ctx context.Context, client *http.Client, tag string) (int64, error) {
	query := fmt.Sprintf(`FROM e IN events WHERE e.type == %q AND e.data.tags CONTAINS %q PROJECT INTO MAX(e.id AS INT)`, DecisionType, tag)
	body, _ := json.Marshal(map[string]string{"query": query})
	var answer bytes.Buffer
	if err := t.call(ctx, client, "/api/v1/run-eventql-query", body, &answer); err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(answer.Bytes(), []byte("\n")) {
		var l struct {
			Type    string
			Payload *int64
		}
		if json.Unmarshal(line, &l) == nil && l.Type == "row" {
			if l.Payload == nil {
				return -1, nil
			}
			return *l.Payload, nil
		}
	}
	return 0, fmt.Errorf("the query of the last event of %s answered %.200s", tag, answer.Bytes())
}

// IndexTags registers the data index bench-tags on the tags of the events
// of DecisionType and waits until it is ready.
func (t Target) IndexTags(ctx context.Context) error {
	client := newClient(1)
	body := fmt.Appendf(nil, `{"name":"bench-tags","path":"/tags","eventTypes":[%q]}`, DecisionType)
	if err := t.call(ctx, client, "/api/v1/register-data-index", body, nil); err != nil {
		return err
	}
	var answer bytes.Buffer
	for {
		answer.Reset()
		if err := t.call(ctx, client, "/api/v1/read-data-indexes", []byte(`{}`), &answer); err != nil {
			return err
		}
		for _, line := range bytes.Split(answer.Bytes(), []byte("\n")) {
			var l struct {
				Payload struct{ Name, State string }
			}
			if json.Unmarshal(line, &l) == nil && l.Payload.Name == "bench-tags" && l.Payload.State == "ready" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// decisionBody is a write-events body of one event of DecisionType on
// subject, tagged tag and student:bench-<c>, guarded by precondition (a
// JSON object; none when "").
func decisionBody(c int, subject, tag, precondition string) []byte {
	b := fmt.Appendf(nil, `{"events":[{"source":"https://bench.eventstore.example","subject":%q,"type":%q,"data":{"tags":[%q,"student:bench-%d"]}}]`,
		subject, DecisionType, tag, c)
	if precondition != "" {
		b = fmt.Appendf(b, `,"preconditions":[%s]`, precondition)
	}
	return append(b, '}')
}

// queryPrecondition is the isEventQlQueryTrue precondition that condition
// holds over the events of DecisionType tagged tag that where (unless "")
// admits too.
func queryPrecondition(tag, where, condition string) string {
	if where != "" {
		where = " AND " + where
	}
	query := fmt.Sprintf(`FROM e IN events WHERE e.type == %q AND e.data.tags CONTAINS %q%s PROJECT INTO %s`, DecisionType, tag, where, condition)
	q, _ := json.Marshal(query) // a string always marshals
	return fmt.Sprintf(`{"type":"isEventQlQueryTrue","payload":{"query":%s}}`, q)
}

// runDCB runs the dcb scenario: a store of opts.DCBEvents events of
// DecisionType on Boundaries courses; then, for opts.Duration each,
// opts.Clients clients writing with isSubjectOnEventId (the reference),
// the same number deciding on a course each (a precondition that reads
// the course's events), and dcbClients clients of the public DCB
// benchmark's shape against as many plain writes, all of them events of
// the same kind (Shape). It prints the two
// ratios the decisions are measured by: decisions / isSubjectOnEventId and
// unrelated appends / plain writes.
func (r *runner) runDCB() error {
	o := r.opts
	fmt.Fprintf(r.out, "dcb: writing %d events of %s on %d courses\n", o.DCBEvents, DecisionType, Boundaries)
	if err := r.target.FillDecisions(r.ctx, o.DCBEvents); err != nil {
		return err
	}
	if o.DCBIndex {
		start := time.Now()
		if err := r.target.IndexTags(r.ctx); err != nil {
			return err
		}
		took := time.Since(start)
		fmt.Fprintf(r.out, "%-28s data index on /tags built in %v: %.0f events/s\n", "dcb-index", took.Round(time.Millisecond),
			float64(o.DCBEvents)/took.Seconds())
	}
	decide := func(name string, clients int, shape Shape) func() func(time.Duration) Result {
		return func() func(time.Duration) Result { return r.target.Decide(r.ctx, name, clients, shape) }
	}
	decisions := r.runPaired([]string{"dcb-subject", "dcb-decision"}, []func() func(time.Duration) Result{
		decide(fmt.Sprintf("isSubjectOnEventId x%d", o.Clients), o.Clients, ShapeOwnSubject),
		decide(fmt.Sprintf("decision on a course x%d", o.Clients), o.Clients, ShapeDecision),
	})
	appends := r.runPaired([]string{"dcb-plain", "dcb-unrelated"}, []func() func(time.Duration) Result{
		decide(fmt.Sprintf("write 1/request x%d", dcbClients), dcbClients, ShapePlain),
		decide(fmt.Sprintf("unrelated appends x%d", dcbClients), dcbClients, ShapeUnrelated),
	})
	fmt.Fprintf(r.out, "%-28s decisions / isSubjectOnEventId: %.2f; unrelated appends / plain writes: %.2f (at %d events)\n", "",
		ratio(decisions[1].RequestsPerSecond, decisions[0].RequestsPerSecond), ratio(appends[1].RequestsPerSecond, appends[0].RequestsPerSecond), o.DCBEvents)
	return nil
}

// runPaired runs loads in opts.Slices rounds of Duration/Slices each, one
// slice of each per round, their order turning from round to round, so
// that a change of the machine's load hits them alike, and records each
// under its scenario's name (runAlternating does this for the write
// scenarios). With one slice they run back to back. A load prepares each
// slice untimed and returns the slice's run, of which alone the server's
// CPU is measured.
func (r *runner) runPaired(scenarios []string, loads []func() func(time.Duration) Result) []Record {
	rounds := max(1, r.opts.Slices)
	slice := r.opts.Duration / time.Duration(rounds)
	results := make([]Result, len(loads))
	used := make([]*Usage, len(loads))
	for round := 0; round < rounds; round++ {
		for k := range loads {
			i := (k + round) % len(loads)
			run := loads[i]()
			res, u := r.sample(r.server, func() Result { return run(slice) })
			results[i], used[i] = results[i].merge(res), used[i].add(u)
		}
	}
	if rounds > 1 {
		fmt.Fprintf(r.out, "%s alternated in %d slices of %s\n", strings.Join(scenarios, ", "), rounds, slice)
	}
	records := make([]Record, len(loads))
	for i, scenario := range scenarios {
		slices.Sort(results[i].Latencies)
		records[i] = r.record(scenario, results[i], used[i])
	}
	return records
}
