package e2e

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// The sequential specification of decisions across entities (the
// dynamic-consistency-boundary pattern, docs/eventql.md "Decisions across
// entities"): events tagged with a course and a student, and for each tag
// the number of events that carry it and the id of the last. Reads return
// one of them; a capped enrolment writes if its course and its student are
// both below their caps; an enrolment "after position" writes if no event
// of its course or its student came after the position its client knows.
// Each epoch of the test has courses and students of its own, so the
// history is partitioned by epoch.

// dcbKind is what one operation does.
type dcbKind int

const (
	dcbLast   dcbKind = iota // the last id of a tag (MAX of a query; -1 for none)
	dcbCount                 // the number of events of a tag
	dcbCapped                // an enrolment on two preconditions: COUNT() < cap of its course, of its student
	dcbAfter                 // an enrolment on one: no event of the course or the student after a position
	dcbKinds
)

var dcbKindNames = [dcbKinds]string{"last", "count", "capped", "after"}

func (k dcbKind) String() string { return dcbKindNames[k] }

// The tags of an epoch: dcbCourses courses, then dcbStudents students.
const (
	dcbCourses    = 3
	dcbStudents   = 3
	dcbTags       = dcbCourses + dcbStudents
	dcbCourseCap  = 6
	dcbStudentCap = 4
	dcbType       = "io.example.dcb.enrolled"
)

// dcbInput is an operation's request: a read of tag Tag, or a write of an
// event tagged Course and Student (tag indexes of the epoch).
type dcbInput struct {
	Epoch           int
	Kind            dcbKind
	Tag             int   // reads
	Course, Student int   // writes: Course < dcbCourses <= Student
	After           int64 // dcbAfter: the position, -1 for none
}

// dcbOutput is an operation's answer: a read's value, or whether a write
// happened and the id it was given.
type dcbOutput struct {
	Value   int64
	Written bool
	ID      int64
}

// dcbState is an epoch's tags and the highest id it gave.
type dcbState struct {
	Count, Last [dcbTags]int64
	Max         int64
}

func (s dcbState) holds(in dcbInput) bool {
	switch in.Kind {
	case dcbCapped:
		return s.Count[in.Course] < dcbCourseCap && s.Count[in.Student] < dcbStudentCap
	case dcbAfter:
		return s.Last[in.Course] <= in.After && s.Last[in.Student] <= in.After
	}
	return false
}

// dcbModel is the model of one epoch.
var dcbModel = porcupine.Model{
	Partition: partitionBy(func(op porcupine.Operation) int { return op.Input.(dcbInput).Epoch }),
	Init: func() any {
		s := dcbState{Max: -1}
		for i := range s.Last {
			s.Last[i] = -1
		}
		return s
	},
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(dcbState), input.(dcbInput), output.(dcbOutput)
		switch {
		case in.Kind == dcbLast:
			return out.Value == st.Last[in.Tag], st
		case in.Kind == dcbCount:
			return out.Value == st.Count[in.Tag], st
		case !out.Written:
			return !st.holds(in), st
		case !st.holds(in) || out.ID <= st.Max:
			return false, st
		}
		for _, tag := range []int{in.Course, in.Student} {
			st.Count[tag]++
			st.Last[tag] = out.ID
		}
		st.Max = out.ID
		return true, st
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		fmt.Fprint(h, state.(dcbState))
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(dcbInput), output.(dcbOutput)
		var call string
		switch in.Kind {
		case dcbLast, dcbCount:
			return fmt.Sprintf("%s(%s) -> %d", in.Kind, dcbTag(in.Epoch, in.Tag), out.Value)
		case dcbCapped:
			call = fmt.Sprintf("capped(%s, %s)", dcbTag(in.Epoch, in.Course), dcbTag(in.Epoch, in.Student))
		default:
			call = fmt.Sprintf("after(%s, %s, %s)", dcbTag(in.Epoch, in.Course), dcbTag(in.Epoch, in.Student), idText(in.After))
		}
		if !out.Written {
			return call + " -> 409"
		}
		return fmt.Sprintf("%s -> %d", call, out.ID)
	},
	DescribeState: func(state any) string {
		st := state.(dcbState)
		return fmt.Sprintf("counts are %v and last ids %v", st.Count, st.Last)
	},
}

// dcbTag is the tag of an epoch's course or student.
func dcbTag(epoch, tag int) string {
	if tag < dcbCourses {
		return fmt.Sprintf("course:%d-%d", epoch, tag)
	}
	return fmt.Sprintf("student:%d-%d", epoch, tag-dcbCourses)
}

// TestLinearizableDecisionsModel feeds the model hand-made histories.
func TestLinearizableDecisionsModel(t *testing.T) {
	op := func(client int, call, ret int64, in dcbInput, out dcbOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
	}
	const c0, c1, s0, s1 = 0, 1, dcbCourses, dcbCourses + 1
	cases := []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"decisions on disjoint boundaries at the same position both write", []porcupine.Operation{
			op(0, 0, 10, dcbInput{Kind: dcbAfter, Course: c0, Student: s0, After: -1}, dcbOutput{Written: true, ID: 4}),
			op(1, 0, 10, dcbInput{Kind: dcbAfter, Course: c1, Student: s1, After: -1}, dcbOutput{Written: true, ID: 5}),
		}, true},
		{"decisions sharing a student at the same position both write", []porcupine.Operation{
			op(0, 0, 10, dcbInput{Kind: dcbAfter, Course: c0, Student: s0, After: -1}, dcbOutput{Written: true, ID: 4}),
			op(1, 0, 10, dcbInput{Kind: dcbAfter, Course: c1, Student: s0, After: -1}, dcbOutput{Written: true, ID: 5}),
		}, false},
		{"one of two decisions sharing a course at the same position writes", []porcupine.Operation{
			op(0, 0, 10, dcbInput{Kind: dcbAfter, Course: c0, Student: s0, After: -1}, dcbOutput{}),
			op(1, 0, 10, dcbInput{Kind: dcbAfter, Course: c0, Student: s1, After: -1}, dcbOutput{Written: true, ID: 5}),
			op(0, 11, 12, dcbInput{Kind: dcbLast, Tag: c0}, dcbOutput{Value: 5}),
		}, true},
		{"a decision refused with nothing after its position", []porcupine.Operation{
			op(0, 0, 1, dcbInput{Kind: dcbAfter, Course: c0, Student: s0, After: -1}, dcbOutput{}),
		}, false},
		{"a course over its cap", func() []porcupine.Operation {
			var h []porcupine.Operation
			for i := range dcbCourseCap + 1 {
				h = append(h, op(0, int64(2*i), int64(2*i+1), dcbInput{Kind: dcbCapped, Course: c0, Student: s0 + i%2}, dcbOutput{Written: true, ID: int64(i)}))
			}
			return h
		}(), false},
		{"a stale count after a write returned", []porcupine.Operation{
			op(0, 0, 1, dcbInput{Kind: dcbCapped, Course: c0, Student: s0}, dcbOutput{Written: true, ID: 0}),
			op(1, 2, 3, dcbInput{Kind: dcbCount, Tag: s0}, dcbOutput{Value: 0}),
		}, false},
	}
	for _, tc := range cases {
		if got := porcupine.CheckOperations(dcbModel, tc.history); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}

// TestLinearizableDecisions runs concurrent clients that decide across
// entities against the real binary, through a data index on the tags, as
// the DCB libraries do (the tags inside data, "after position" as
// (e.id AS INT + 1) > n), on one Pebble node and on three PostgreSQL
// nodes, and checks with porcupine that the history is linearizable
// against dcbModel: no two decisions whose boundaries share a tag both
// write on the same knowledge, and decisions on disjoint boundaries do not
// refuse each other.
func TestLinearizableDecisions(t *testing.T) { eachTarget(t, testLinearizableDecisions) }

func testLinearizableDecisions(t *testing.T, start starter) {
	const (
		clients      = 8
		epoch        = 12  // operations of a client in one epoch
		opsPerClient = 144 // 1,152 operations in 12 epochs
	)
	inst := start(t)
	if r := inst.Do("POST", "/api/v1/register-data-index", harness.Token, `{"name":"tags","path":"/tags","eventTypes":["`+dcbType+`"]}`); r.StatusCode != 200 {
		t.Fatalf("register: %d %s", r.StatusCode, r.Body)
	}
	waitUntil(t, 30*time.Second, func() bool { return dataIndexes(t, inst)["tags"].State == "ready" })
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	rec := &dcbRecorder{linRecorder: linRecorder{start: time.Now()}}
	httpClient := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer httpClient.CloseIdleConnections()
	var wg sync.WaitGroup
	for id := 0; id < clients; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dcbClient{lin: linClient{id: id, http: httpClient, target: inst}, rec: rec, rng: rand.New(rand.NewPCG(seed, uint64(id)))}
			for n := 0; n < opsPerClient && !rec.failed.Load(); n++ {
				if n%epoch == 0 {
					c.known = [dcbTags]int64{-1, -1, -1, -1, -1, -1}
				}
				c.step(n/epoch, n)
			}
		}()
	}
	wg.Wait()
	if len(rec.errs) > 0 {
		t.Fatalf("%d requests without a 200 or 409 answer that fits the request, first: %s", len(rec.errs), strings.Join(rec.errs[:min(5, len(rec.errs))], "; "))
	}
	t.Logf("%d operations by %d clients in %d epochs in %s; outcomes: %s", len(rec.history), clients, len(dcbModel.Partition(rec.history)),
		time.Since(rec.start).Round(time.Millisecond), rec.outcomes())
	for _, k := range []dcbKind{dcbCapped, dcbAfter} {
		if rec.counts[k][0] == 0 || rec.counts[k][1] == 0 {
			t.Fatalf("%s: %d written, %d refused; the test needs both to mean anything", k, rec.counts[k][1], rec.counts[k][0])
		}
	}
	if msg := modelReport(dcbModel, "epochs", func(op porcupine.Operation) string { return fmt.Sprintf("epoch %d", op.Input.(dcbInput).Epoch) },
		rec.history, func() string { return artifactDir(t) }); msg != "" {
		t.Fatal(msg)
	}
	// The decisions read through the index, and the store holds the
	// acknowledged events and no other.
	if keys := metrics(t, inst)[`eventstore_data_index_keys_total{index="tags"}`]; keys == 0 {
		t.Fatal("no key was written to the data index")
	}
	res := runQuery(t, inst, `FROM e IN events WHERE e.type == "`+dcbType+`" PROJECT INTO COUNT()`)
	if res.status != 200 || len(res.rows) != 1 || res.rows[0] != float64(rec.written) {
		t.Fatalf("%+v events stored, %d acknowledged", res, rec.written)
	}
}

// dcbRecorder collects the operations of all clients.
type dcbRecorder struct {
	linRecorder
	counts  [dcbKinds][2]int // kind -> [refused or read, written]
	written int
}

func (r *dcbRecorder) add(op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, op)
	if op.Output.(dcbOutput).Written {
		r.counts[op.Input.(dcbInput).Kind][1]++
		r.written++
	} else {
		r.counts[op.Input.(dcbInput).Kind][0]++
	}
}

func (r *dcbRecorder) outcomes() string {
	return fmt.Sprintf("reads %d, capped %d/%d written, after %d/%d written", r.counts[dcbLast][0]+r.counts[dcbCount][0],
		r.counts[dcbCapped][1], r.counts[dcbCapped][0]+r.counts[dcbCapped][1], r.counts[dcbAfter][1], r.counts[dcbAfter][0]+r.counts[dcbAfter][1])
}

// dcbClient is one client: it remembers the last id it knows of each tag
// of its epoch, from its reads and its own writes.
type dcbClient struct {
	lin   linClient // its HTTP client and target
	rec   *dcbRecorder
	rng   *rand.Rand
	known [dcbTags]int64
}

// step runs one random operation of epoch and records it.
func (c *dcbClient) step(epoch, n int) {
	in := dcbInput{Epoch: epoch, Course: c.rng.IntN(dcbCourses), Student: dcbCourses + c.rng.IntN(dcbStudents)}
	switch r := c.rng.IntN(100); {
	case r < 20:
		in.Kind, in.Tag = dcbLast, c.rng.IntN(dcbTags)
	case r < 30:
		in.Kind, in.Tag = dcbCount, c.rng.IntN(dcbTags)
	case r < 60:
		in.Kind = dcbCapped
	default:
		in.Kind, in.After = dcbAfter, max(c.known[in.Course], c.known[in.Student])
	}
	call := c.rec.now()
	out, err := c.do(in, n)
	ret := c.rec.now()
	if err != nil {
		c.rec.fail(fmt.Sprintf("client %d, operation %d, %s: %v", c.lin.id, n, dcbModel.DescribeOperation(in, dcbOutput{}), err))
		return
	}
	switch {
	case in.Kind == dcbLast:
		c.known[in.Tag] = out.Value
	case out.Written:
		c.known[in.Course], c.known[in.Student] = out.ID, out.ID
	}
	c.rec.add(porcupine.Operation{ClientId: c.lin.id, Input: in, Call: call, Output: out, Return: ret})
}

// do sends the request of in and returns its outcome.
func (c *dcbClient) do(in dcbInput, n int) (dcbOutput, error) {
	if in.Kind == dcbLast || in.Kind == dcbCount {
		project := "MAX(e.id AS INT)"
		if in.Kind == dcbCount {
			project = "COUNT()"
		}
		return c.read(fmt.Sprintf(`FROM e IN events WHERE e.type == %q AND e.data.tags CONTAINS %q PROJECT INTO %s`, dcbType, dcbTag(in.Epoch, in.Tag), project))
	}
	course, student := dcbTag(in.Epoch, in.Course), dcbTag(in.Epoch, in.Student)
	var preconditions []any
	if in.Kind == dcbCapped {
		for _, cap := range []struct {
			tag string
			max int
		}{{course, dcbCourseCap}, {student, dcbStudentCap}} {
			preconditions = append(preconditions, eventQLPrecondition(fmt.Sprintf(`FROM e IN events WHERE e.type == %q AND e.data.tags CONTAINS %q PROJECT INTO COUNT() < %d`, dcbType, cap.tag, cap.max)))
		}
	} else {
		preconditions = []any{eventQLPrecondition(fmt.Sprintf(`FROM e IN events WHERE e.type == %q AND (e.data.tags CONTAINS %q OR e.data.tags CONTAINS %q) AND (e.id AS INT + 1) > %d PROJECT INTO COUNT() == 0`,
			dcbType, course, student, in.After+1))}
	}
	subject := "/students/" + strings.TrimPrefix(student, "student:")
	body := map[string]any{
		"events":        []any{map[string]any{"source": "https://lin.example.com", "subject": subject, "type": dcbType, "data": map[string]any{"tags": []string{course, student}, "client": c.lin.id, "op": n}}},
		"preconditions": preconditions,
	}
	status, raw, err := c.lin.post("/api/v1/write-events", body)
	switch {
	case err != nil:
		return dcbOutput{}, err
	case status == 409 && string(raw) == "state conflict: precondition failed\n":
		return dcbOutput{}, nil
	case status != 200:
		return dcbOutput{}, fmt.Errorf("want 200 or 409 state conflict, got %d %q", status, raw)
	}
	var written []struct{ ID, Subject string }
	if err := json.Unmarshal(raw, &written); err != nil || len(written) != 1 || written[0].Subject != subject {
		return dcbOutput{}, fmt.Errorf("want the event written on %s, got %s", subject, raw)
	}
	id, err := strconv.ParseInt(written[0].ID, 10, 64)
	return dcbOutput{Written: true, ID: id}, err
}

// read runs query, whose one row is a number or null (-1).
func (c *dcbClient) read(query string) (dcbOutput, error) {
	status, raw, err := c.lin.post("/api/v1/run-eventql-query", map[string]string{"query": query})
	if err != nil {
		return dcbOutput{}, err
	}
	var rows []*int64
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var l struct {
			Type    string
			Payload *int64
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Type == "row" {
			rows = append(rows, l.Payload)
		}
	}
	if status != 200 || len(rows) != 1 {
		return dcbOutput{}, fmt.Errorf("want 200 and one row, got %d %q", status, raw)
	}
	if rows[0] == nil {
		return dcbOutput{Value: -1}, nil
	}
	return dcbOutput{Value: *rows[0]}, nil
}
