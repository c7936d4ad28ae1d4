package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// linType is the type of every event the linearizability test writes, so
// that fromLatestEvent on (subject, linType) finds a subject's latest event.
const linType = "io.example.lin.written"

// casWeights is the mix of operations, in percent.
var casWeights = [casKinds]int{
	casRead: 20, casReadLatest: 10, casWrite: 12, casPristine: 6, casPristineQL: 4,
	casPopulated: 6, casOnEventID: 28, casOnEventIDQL: 14,
}

// TestLinearizablePreconditions runs concurrent clients that read the latest
// event of a few subjects and write with and without preconditions against
// the real binary, records every operation with its call and return time, and
// checks with porcupine that the history is linearizable against the
// per-subject compare-and-set model (linearizable_model_test.go). Afterwards
// the store must hold exactly the acknowledged events, contiguous and chained.
//
// A request without a complete 200 or 409 answer (transport error, timeout,
// other status) has an unknown outcome; on loopback with a 20 s timeout that
// is a failure in itself, so the test stops and fails on it rather than
// modelling it as an operation that may or may not have happened.
func TestLinearizablePreconditions(t *testing.T) { eachTarget(t, testLinearizablePreconditions) }

func testLinearizablePreconditions(t *testing.T, start starter) {
	const (
		clients      = 16
		subjects     = 6   // at a time
		epoch        = 30  // operations of a client before it moves to fresh subjects
		opsPerClient = 150 // 2,400 operations on 30 subjects
	)
	inst := start(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	rec := &linRecorder{start: time.Now()}
	httpClient := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer httpClient.CloseIdleConnections()
	var wg sync.WaitGroup
	for id := 0; id < clients; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &linClient{id: id, http: httpClient, target: inst, rec: rec, rng: rand.New(rand.NewPCG(seed, uint64(id))), known: map[string]int64{}}
			k := 0
			for n := 0; n < opsPerClient && !rec.failed.Load(); n++ {
				if n%epoch == 0 || c.rng.IntN(2) == 0 { // else stay on the subject, as read-then-write does
					k = c.rng.IntN(subjects)
				}
				c.step(fmt.Sprintf("/lin/%d/%d", n/epoch, k), n)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(rec.start)
	if len(rec.errs) > 0 {
		t.Fatalf("%d requests without a 200 or 409 answer that fits the request (outcome unknown or answer malformed), first: %s", len(rec.errs), strings.Join(rec.errs[:min(5, len(rec.errs))], "; "))
	}
	if len(rec.history) < 1000 {
		t.Fatalf("%d operations recorded, want at least 1000", len(rec.history))
	}
	parts := casModel.Partition(rec.history)
	t.Logf("%d operations by %d clients on %d subjects in %s, %d of them concurrent with another on their subject; outcomes: %s",
		len(rec.history), clients, len(parts), elapsed.Round(time.Millisecond), concurrent(parts), rec.outcomes())
	for _, k := range []casKind{casOnEventID, casOnEventIDQL} {
		if rec.count[k][0] == 0 || rec.count[k][1] == 0 {
			t.Fatalf("%s: %d written, %d refused; the test needs both to mean anything", k, rec.count[k][1], rec.count[k][0])
		}
	}

	checkStart := time.Now()
	if msg := linearizabilityReport(rec.history, func() string { return artifactDir(t) }); msg != "" {
		t.Fatal(msg)
	}
	t.Logf("linearizable; checked in %s", time.Since(checkStart).Round(time.Millisecond))

	// The store holds exactly the acknowledged events: ids contiguous, chain
	// intact, acknowledged events byte-identical, nothing from a refused write;
	// each subject holds the events the history gave it.
	if total := checkStore(t, inst, rec.acked); total != len(rec.acked) {
		t.Fatalf("%d events stored, %d acknowledged: a refused write left events", total, len(rec.acked))
	}
	for s, ids := range rec.bySubject {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		want := make([]string, len(ids))
		for i, id := range ids {
			want[i] = strconv.FormatInt(id, 10)
		}
		if got := readIDs(t, inst, fmt.Sprintf(`{"subject":%q}`, s)); got != strings.Join(want, ",") {
			t.Fatalf("events of %s: read %q, acknowledged %q", s, got, strings.Join(want, ","))
		}
	}
}

// concurrent counts the operations whose interval overlaps that of another
// operation in their partition.
func concurrent(parts [][]porcupine.Operation) int {
	n := 0
	for _, ops := range parts {
		sorted := append([]porcupine.Operation(nil), ops...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
		overlaps := make([]bool, len(sorted))
		end, last := int64(-1), -1 // latest return so far and its operation
		for i, op := range sorted {
			if op.Call <= end {
				overlaps[i], overlaps[last] = true, true
			}
			if op.Return > end {
				end, last = op.Return, i
			}
		}
		for _, o := range overlaps {
			if o {
				n++
			}
		}
	}
	return n
}

// linRecorder collects the operations of all clients.
type linRecorder struct {
	start  time.Time
	failed atomic.Bool

	mu        sync.Mutex
	history   []porcupine.Operation
	errs      []string
	acked     map[string]string  // id -> event as acknowledged
	bySubject map[string][]int64 // subject -> acknowledged ids
	count     [casKinds][2]int   // kind -> [refused or read, written]
}

func (r *linRecorder) now() int64 { return time.Since(r.start).Nanoseconds() }

func (r *linRecorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, msg)
	r.failed.Store(true)
}

func (r *linRecorder) add(op porcupine.Operation, events []storedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, op)
	in, out := op.Input.(casInput), op.Output.(casOutput)
	if out.Written {
		r.count[in.Kind][1]++
	} else {
		r.count[in.Kind][0]++
	}
	if r.acked == nil {
		r.acked, r.bySubject = map[string]string{}, map[string][]int64{}
	}
	for _, e := range events {
		r.acked[e.ID] = string(e.raw)
		id, _ := strconv.ParseInt(e.ID, 10, 64)
		r.bySubject[e.Subject] = append(r.bySubject[e.Subject], id)
	}
}

func (r *linRecorder) outcomes() string {
	var parts []string
	for k := casKind(0); k < casKinds; k++ {
		if k.isRead() {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.count[k][0]))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d/%d written", k, r.count[k][1], r.count[k][0]+r.count[k][1]))
		}
	}
	return strings.Join(parts, ", ")
}

// linClient is one client: it remembers the latest id it saw per subject
// and uses it as the expected id of its isSubjectOnEventId writes.
type linClient struct {
	id     int
	http   *http.Client
	target harness.Target // each request to a node of its own choosing
	rec    *linRecorder
	rng    *rand.Rand
	known  map[string]int64
}

// step runs one random operation on subject and records it.
func (c *linClient) step(subject string, n int) {
	in := casInput{Subject: subject, Kind: c.pick()}
	if in.Kind == casOnEventID || in.Kind == casOnEventIDQL {
		if latest, ok := c.known[subject]; ok && latest >= 0 {
			in.Expect = latest
		} // else 0: refused unless the subject's only event is the store's first
	}
	call := c.rec.now()
	out, events, err := c.do(in, n)
	ret := c.rec.now()
	if err != nil {
		c.rec.fail(fmt.Sprintf("client %d, operation %d, %s: %v", c.id, n, describeInput(in), err))
		return
	}
	switch {
	case in.Kind.isRead():
		c.known[subject] = out.Latest
	case out.Written:
		c.known[subject] = out.Last
	}
	c.rec.add(porcupine.Operation{ClientId: c.id, Input: in, Call: call, Output: out, Return: ret}, events)
}

func (c *linClient) pick() casKind {
	r := c.rng.IntN(100)
	for k, w := range casWeights {
		if r < w {
			return casKind(k)
		}
		r -= w
	}
	panic("casWeights do not add up to 100")
}

// do sends the request of in and returns its outcome, with the events a
// write was given.
func (c *linClient) do(in casInput, n int) (casOutput, []storedEvent, error) {
	if in.Kind.isRead() {
		return c.read(in)
	}
	events := make([]map[string]any, 1+c.rng.IntN(2))
	for j := range events {
		events[j] = map[string]any{"source": "https://lin.example.com", "subject": in.Subject, "type": linType, "data": map[string]int{"client": c.id, "op": n, "n": j}}
	}
	body := map[string]any{"events": events}
	if p := precondition(in); p != nil {
		body["preconditions"] = []any{p}
	}
	status, raw, err := c.post("/api/v1/write-events", body)
	if err != nil {
		return casOutput{}, nil, err
	}
	switch {
	case status == 409 && string(raw) == "state conflict: precondition failed\n" && in.Kind != casWrite:
		return casOutput{}, nil, nil
	case status != 200:
		return casOutput{}, nil, fmt.Errorf("want 200 or 409 state conflict, got %d %q", status, raw)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil || len(raws) != len(events) {
		return casOutput{}, nil, fmt.Errorf("want %d events, got %s", len(events), raw)
	}
	written := make([]storedEvent, len(raws))
	var out casOutput
	for j, r := range raws {
		e, id, err := linEvent(r, in.Subject)
		if err != nil {
			return casOutput{}, nil, err
		}
		if j == 0 {
			out.First = id
		} else if id != out.Last+1 {
			return casOutput{}, nil, fmt.Errorf("ids of one write not consecutive: %s", raw)
		}
		out.Last, written[j] = id, e
	}
	out.Written = true
	return out, written, nil
}

// precondition returns the precondition of a write, or nil.
func precondition(in casInput) map[string]any {
	switch in.Kind {
	case casPristine, casPopulated:
		return map[string]any{"type": map[casKind]string{casPristine: "isSubjectPristine", casPopulated: "isSubjectPopulated"}[in.Kind], "payload": map[string]string{"subject": in.Subject}}
	case casOnEventID:
		return map[string]any{"type": "isSubjectOnEventId", "payload": map[string]string{"subject": in.Subject, "eventId": strconv.FormatInt(in.Expect, 10)}}
	case casPristineQL:
		return eventQLPrecondition(fmt.Sprintf("FROM e IN events WHERE e.subject == '%s' PROJECT INTO COUNT() == 0", in.Subject))
	case casOnEventIDQL:
		return eventQLPrecondition(fmt.Sprintf("FROM e IN events WHERE e.subject == '%s' ORDER BY e.id AS INT DESC TOP 1 PROJECT INTO e.id == '%d'", in.Subject, in.Expect))
	}
	return nil
}

func eventQLPrecondition(query string) map[string]any {
	return map[string]any{"type": "isEventQlQueryTrue", "payload": map[string]string{"query": query}}
}

// read returns the latest id of in.Subject: the first event of an
// antichronological read, or the one event fromLatestEvent starts at.
func (c *linClient) read(in casInput) (casOutput, []storedEvent, error) {
	options := map[string]any{"order": "antichronological"}
	if in.Kind == casReadLatest {
		options = map[string]any{"fromLatestEvent": map[string]string{"subject": in.Subject, "type": linType, "ifEventIsMissing": "read-nothing"}}
	}
	status, raw, err := c.post("/api/v1/read-events", map[string]any{"subject": in.Subject, "options": options})
	if err != nil {
		return casOutput{}, nil, err
	}
	if status != 200 {
		return casOutput{}, nil, fmt.Errorf("want 200, got %d %q", status, raw)
	}
	if len(raw) == 0 {
		return casOutput{Latest: -1}, nil, nil
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	if in.Kind == casReadLatest && len(lines) != 1 {
		return casOutput{}, nil, fmt.Errorf("fromLatestEvent on the subject's only type: want at most 1 event, got %d: %s", len(lines), raw)
	}
	var line ndjsonLine
	if err := json.Unmarshal(lines[0], &line); err != nil || line.Type != "event" {
		return casOutput{}, nil, fmt.Errorf("want an event line, got %q", lines[0])
	}
	_, id, err := linEvent(line.Payload, in.Subject)
	return casOutput{Latest: id}, nil, err
}

// linEvent decodes an event on subject and its id.
func linEvent(raw json.RawMessage, subject string) (storedEvent, int64, error) {
	var e storedEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, 0, fmt.Errorf("event %s: %v", raw, err)
	}
	e.raw = raw
	id, err := strconv.ParseInt(e.ID, 10, 64)
	if err != nil || e.Subject != subject || e.Type != linType {
		return e, 0, fmt.Errorf("want an event of type %s on %s with a decimal id, got %s", linType, subject, raw)
	}
	return e, id, nil
}

// post sends body as JSON to path and returns the status and whole body.
func (c *linClient) post(path string, body any) (int, []byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest("POST", c.target.URL("http")+path, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("outcome unknown: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("outcome unknown: reading the answer: %v", err)
	}
	return resp.StatusCode, raw, nil
}
