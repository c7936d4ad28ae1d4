package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// outcomeKind is what a client learnt of one write.
type outcomeKind int

const (
	outcomeOK      outcomeKind = iota // 200: it happened
	outcomeRefused                    // 409 or 400: a definite failure, nothing stored
	outcomeUnknown                    // anything else: it may or may not have happened
)

// writeRecord is one write request of the workload. Every event of a write
// carries its request key req and its position j in its data, so that the
// store can be searched for it afterwards.
type writeRecord struct {
	req       string
	node      int   // the node it was sent to
	n         int   // events in the request
	call, ret int64 // ns since the history began
	outcome   outcomeKind
	answer    string        // status and body, or the transport error
	events    []storedEvent // outcomeOK: the events as acknowledged
	lin       int           // index of its operation in faultHistory.lin, or -1
}

// linOp is an operation of the precondition clients for porcupine; a write
// with an unknown outcome is resolved against the store at the end.
type linOp struct {
	op    porcupine.Operation
	write int // index in faultHistory.writes, or -1 for a read
}

// obsEvent is one event an observer received.
type obsEvent struct {
	id   int64
	hash string
}

// observerRecord is what one observer received, over all its connections.
type observerRecord struct {
	node       int
	events     []obsEvent
	reconnects int
	problems   []string
}

// anomaly is one violation found by a checker, at the call time of the
// operation it concerns (or -1 when it concerns the whole history).
type anomaly struct {
	at  int64
	msg string
}

// faultHistory records the operations of the workload with their times.
type faultHistory struct {
	start time.Time

	mu        sync.Mutex
	writes    []writeRecord
	lin       []linOp
	observers []*observerRecord
}

// newFaultHistory returns an empty history whose clock starts now.
func newFaultHistory() *faultHistory {
	return &faultHistory{start: time.Now()}
}

// now returns the history's clock: nanoseconds since it began.
func (h *faultHistory) now() int64 { return time.Since(h.start).Nanoseconds() }

// write posts body (the events of request req, n of them) to node at url,
// records the write and returns its record; lin is the input of a
// precondition client's write, else nil.
func (h *faultHistory) write(client *http.Client, node int, url, req, body string, n int, lin *casInput, clientID int) writeRecord {
	call := h.now()
	events, err := postWrite(client, url+"/api/v1/write-events", body)
	rec := writeRecord{req: req, node: node, n: n, call: call, ret: h.now(), events: events, lin: -1}
	var status *statusError
	switch {
	case err == nil:
		rec.outcome = outcomeOK
	case errors.As(err, &status) && (status.code == 409 || status.code == 400):
		rec.outcome, rec.answer = outcomeRefused, fmt.Sprintf("%d %s", status.code, strings.TrimSpace(status.body))
	case errors.As(err, &status):
		rec.outcome, rec.answer = outcomeUnknown, fmt.Sprintf("%d %s", status.code, strings.TrimSpace(status.body))
	default:
		rec.outcome, rec.answer = outcomeUnknown, "transport error"
		if strings.Contains(err.Error(), "Client.Timeout") {
			rec.answer = "client timeout"
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// A precondition write enters the model when it happened (200), when
	// its precondition did not hold (409 precondition failed) or when its
	// outcome is unknown; any other definite failure (a 400 when the
	// precondition's query failed, say) did nothing and tells nothing of
	// the subject, so only the store check sees it.
	if lin != nil && (rec.outcome != outcomeRefused || rec.answer == "409 state conflict: precondition failed") {
		rec.lin = len(h.lin)
		out := casOutput{}
		if rec.outcome == outcomeOK && len(events) > 0 {
			out = casOutput{Written: true, First: idOf(events[0]), Last: idOf(events[len(events)-1])}
		}
		h.lin = append(h.lin, linOp{op: porcupine.Operation{ClientId: clientID, Input: *lin, Call: rec.call, Output: out, Return: rec.ret}, write: len(h.writes)})
	}
	h.writes = append(h.writes, rec)
	return rec
}

// read records a read of the precondition clients that got an answer.
func (h *faultHistory) read(op porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lin = append(h.lin, linOp{op: op, write: -1})
}

// idOf returns an event's id as a number.
func idOf(e storedEvent) int64 {
	var id int64
	_, _ = fmt.Sscan(e.ID, &id)
	return id
}

// storedWrite is what the store holds of one request key.
type storedWrite struct {
	ids []int64
}

// faultReport is what the checkers found: the anomalies, and which writes
// of unknown outcome (by index in faultHistory.writes) are in the store.
type faultReport struct {
	anomalies     []anomaly
	unknownStored map[int]bool
}

// checkFaultHistory runs the checkers over the history and the final store
// (every event, in id order).
func checkFaultHistory(h *faultHistory, store []storedEvent, artifacts func() string) faultReport {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []anomaly
	unknownStored := map[int]bool{}
	add := func(at int64, format string, args ...any) {
		found = append(found, anomaly{at: at, msg: fmt.Sprintf(format, args...)})
	}

	// The store: request key -> ids, every (req, j) once.
	byReq := map[string]*storedWrite{}
	byID := make(map[int64]storedEvent, len(store))
	seen := map[string]int64{}
	for _, e := range store {
		byID[idOf(e)] = e
		req, j, key, ok := requestOf(e)
		if !ok {
			continue
		}
		if first, ok := seen[key]; ok {
			add(-1, "event %d of request %s stored twice: ids %d and %s", j, req, first, e.ID)
		}
		seen[key] = idOf(e)
		sw := byReq[req]
		if sw == nil {
			sw = &storedWrite{}
			byReq[req] = sw
		}
		sw.ids = append(sw.ids, idOf(e))
	}

	// Writes: acknowledged ones stored byte for byte, refused ones absent,
	// unknown ones all or nothing.
	for i, w := range h.writes {
		sw := byReq[w.req]
		switch w.outcome {
		case outcomeOK:
			for _, e := range w.events {
				if got, ok := byID[idOf(e)]; !ok || string(got.raw) != string(e.raw) {
					add(w.call, "acknowledged write %s lost or changed: event %s acknowledged as %s, stored as %s", w.req, e.ID, e.raw, got.raw)
				}
			}
			if sw == nil || len(sw.ids) != w.n {
				add(w.call, "acknowledged write %s of %d events has %d in the store", w.req, w.n, lenIDs(sw))
			}
		case outcomeRefused:
			if sw != nil {
				add(w.call, "write %s answered %q is in the store: ids %v", w.req, w.answer, sw.ids)
			}
		case outcomeUnknown:
			unknownStored[i] = sw != nil
			if sw != nil && len(sw.ids) != w.n {
				add(w.call, "write %s of %d events (answer %s) is partly stored: ids %v", w.req, w.n, w.answer, sw.ids)
			}
		}
		if sw != nil && !consecutive(sw.ids) {
			add(w.call, "the events of write %s are not consecutive: ids %v", w.req, sw.ids)
		}
	}

	// Preconditions: porcupine over reads and definite writes, with each
	// write of unknown outcome either left out (not in the store: it did
	// not happen) or taking effect at some point after its call (in the
	// store, with the ids it got there).
	var history []porcupine.Operation
	for _, l := range h.lin {
		op := l.op
		if l.write >= 0 && h.writes[l.write].outcome == outcomeUnknown {
			sw := byReq[h.writes[l.write].req]
			if sw == nil {
				continue
			}
			op.Output = casOutput{Written: true, First: sw.ids[0], Last: sw.ids[len(sw.ids)-1]}
			op.Return = math.MaxInt64
		}
		history = append(history, op)
	}
	if msg := linearizabilityReport(history, artifacts); msg != "" {
		add(-1, "preconditions: %s; the writes: %s", msg, dumpWrites(h.writes, artifacts()))
	}

	// Observers: each received the store, gap-free, with its hashes.
	for i, o := range h.observers {
		for _, p := range o.problems {
			add(-1, "observer %d on node %d: %s", i, o.node, p)
		}
		if len(o.events) != len(store) {
			add(-1, "observer %d on node %d received %d events, the store holds %d", i, o.node, len(o.events), len(store))
		}
		for j, e := range o.events {
			if j >= len(store) {
				break
			}
			if e.id != int64(j) || e.hash != store[j].Hash {
				add(-1, "observer %d on node %d: event at position %d is id %d hash %s, the store has id %s hash %s", i, o.node, j, e.id, e.hash, store[j].ID, store[j].Hash)
				break
			}
		}
	}
	return faultReport{anomalies: found, unknownStored: unknownStored}
}

// dumpWrites writes every write of the history, with the node it went to,
// into dir and returns the file's path.
func dumpWrites(writes []writeRecord, dir string) string {
	var b strings.Builder
	for _, w := range writes {
		var ids []string
		for _, e := range w.events {
			ids = append(ids, e.ID)
		}
		fmt.Fprintf(&b, "%s-%s node %d %s outcome %d %q ids %s\n", time.Duration(w.call), time.Duration(w.ret), w.node, w.req, w.outcome, w.answer, strings.Join(ids, ","))
	}
	path := filepath.Join(dir, "writes.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return path + " (not written: " + err.Error() + ")"
	}
	return path
}

// lenIDs returns the number of stored events of a request, 0 for none.
func lenIDs(sw *storedWrite) int {
	if sw == nil {
		return 0
	}
	return len(sw.ids)
}

// consecutive reports whether ids, in any order, have no gap.
func consecutive(ids []int64) bool {
	sorted := append([]int64(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i := 1; i < len(sorted); i++ {
		if sorted[i] != sorted[i-1]+1 {
			return false
		}
	}
	return true
}

// faultWindow is one injected fault: from its injection until every node
// wrote again after it healed.
type faultWindow struct {
	kind       string
	start, end int64
	recovery   time.Duration // the slowest node's first write after the heal
}

// faultSummary is one row of the results: a fault kind's injections, the
// operations called during them and the anomalies of those operations.
type faultSummary struct {
	kind          string
	injected      int
	ops           int
	unknown       int // writes of unknown outcome
	unknownStored int // of them, found in the store
	anomalies     int
	maxRecovery   time.Duration
	answers       map[string]int // answers other than 200 and 409 -> count
}

// summarize groups operations and anomalies by the fault windows their
// call time falls in; the last row ("all") is the whole run.
func summarize(h *faultHistory, windows []faultWindow, report faultReport) []faultSummary {
	h.mu.Lock()
	defer h.mu.Unlock()
	rows := map[string]*faultSummary{}
	var order []string
	for _, w := range windows {
		r := rows[w.kind]
		if r == nil {
			r = &faultSummary{kind: w.kind, answers: map[string]int{}}
			rows[w.kind] = r
			order = append(order, w.kind)
		}
		r.injected++
		r.maxRecovery = max(r.maxRecovery, w.recovery)
	}
	in := func(at int64) *faultSummary {
		for _, w := range windows {
			if at >= w.start && at < w.end {
				return rows[w.kind]
			}
		}
		return nil
	}
	all := &faultSummary{kind: "all", injected: len(windows), anomalies: len(report.anomalies), answers: map[string]int{}}
	for i, w := range h.writes {
		rows := []*faultSummary{all}
		if r := in(w.call); r != nil {
			rows = append(rows, r)
		}
		for _, r := range rows {
			if w.outcome == outcomeUnknown {
				r.unknown++
				if report.unknownStored[i] {
					r.unknownStored++
				}
			}
			if w.answer != "" && w.answer != "409 state conflict: precondition failed" {
				r.answers[w.answer]++
			}
		}
	}
	for _, l := range h.lin {
		if l.write < 0 { // a read; writes are counted above
			all.ops++
			if r := in(l.op.Call); r != nil {
				r.ops++
			}
		}
	}
	for _, w := range h.writes {
		all.ops++
		if r := in(w.call); r != nil {
			r.ops++
		}
	}
	for _, a := range report.anomalies {
		if r := in(a.at); r != nil {
			r.anomalies++
		}
	}
	var out []faultSummary
	for _, k := range order {
		all.maxRecovery = max(all.maxRecovery, rows[k].maxRecovery)
		out = append(out, *rows[k])
	}
	return append(out, *all)
}

// formatSummary renders the rows as a table.
func formatSummary(rows []faultSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %8s %10s %15s %9s %12s\n", "fault", "injected", "operations", "unknown/stored", "anomalies", "max recovery")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s %8d %10d %15s %9d %12s\n", r.kind, r.injected, r.ops, fmt.Sprintf("%d/%d", r.unknown, r.unknownStored), r.anomalies, r.maxRecovery.Round(10*time.Millisecond))
	}
	for _, r := range rows {
		if len(r.answers) > 0 && r.kind != "all" {
			keys := make([]string, 0, len(r.answers))
			for k := range r.answers {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%dx %s", r.answers[k], k))
			}
			fmt.Fprintf(&b, "answers during %s: %s\n", r.kind, strings.Join(parts, "; "))
		}
	}
	return b.String()
}

// TestFaultCheckers feeds the checkers of TestFaults hand-made histories,
// so that the suite is known to catch what it is meant to catch.
func TestFaultCheckers(t *testing.T) {
	ev := func(id int, subject, req string, j int) storedEvent {
		data := fmt.Sprintf(`{"req":%q,"j":%d}`, req, j)
		raw := fmt.Sprintf(`{"subject":%q,"id":"%d","data":%s,"hash":"h%d"}`, subject, id, data, id)
		return storedEvent{Subject: subject, ID: fmt.Sprint(id), Data: json.RawMessage(data), Hash: fmt.Sprintf("h%d", id), raw: json.RawMessage(raw)}
	}
	pristine := casInput{Subject: "/s", Kind: casPristine}
	store := []storedEvent{ev(0, "/s", "x", 0), ev(1, "/p", "ok", 0), ev(2, "/p", "ok", 1), ev(3, "/p", "gone?", 0)}
	observer := func(ids ...int64) *observerRecord {
		o := &observerRecord{}
		for _, id := range ids {
			o.events = append(o.events, obsEvent{id: id, hash: fmt.Sprintf("h%d", id)})
		}
		return o
	}
	clean := func() *faultHistory {
		return &faultHistory{
			writes: []writeRecord{
				{req: "x", n: 1, call: 0, ret: 10, outcome: outcomeOK, events: store[:1], lin: 0},
				{req: "ok", n: 2, call: 0, ret: 10, outcome: outcomeOK, events: store[1:3], lin: -1},
				{req: "gone?", n: 1, call: 0, ret: 10, outcome: outcomeUnknown, answer: "client timeout", lin: -1},
				{req: "never", n: 1, call: 0, ret: 10, outcome: outcomeUnknown, answer: "transport error", lin: -1},
				{req: "no", n: 1, call: 0, ret: 10, outcome: outcomeRefused, answer: "409 state conflict: precondition failed", lin: -1},
			},
			lin:       []linOp{{op: porcupineOp(0, pristine, casOutput{Written: true, First: 0, Last: 0}, 0, 10), write: 0}},
			observers: []*observerRecord{observer(0, 1, 2, 3), observer(0, 1, 2, 3)},
		}
	}
	if r := checkFaultHistory(clean(), store, t.TempDir); len(r.anomalies) != 0 || !r.unknownStored[2] || r.unknownStored[3] {
		t.Fatalf("a clean history: %+v", r)
	}
	cases := []struct {
		name   string
		change func(h *faultHistory, store []storedEvent) []storedEvent
		want   string
	}{
		{"an acknowledged write lost", func(h *faultHistory, store []storedEvent) []storedEvent {
			return store[:2]
		}, "acknowledged write ok of 2 events has 1 in the store"},
		{"an acknowledged event changed", func(h *faultHistory, store []storedEvent) []storedEvent {
			h.writes[1].events = []storedEvent{ev(1, "/p", "ok", 0), ev(2, "/other", "ok", 1)}
			return store
		}, "acknowledged write ok lost or changed: event 2"},
		{"a refused write stored", func(h *faultHistory, store []storedEvent) []storedEvent {
			h.writes[4].req = "gone?"
			h.writes[2].req = "unrelated"
			return store
		}, `write gone? answered "409 state conflict: precondition failed" is in the store`},
		{"an unknown write partly stored", func(h *faultHistory, store []storedEvent) []storedEvent {
			h.writes[2].n = 2
			return store
		}, "write gone? of 2 events (answer client timeout) is partly stored"},
		{"an event stored twice", func(h *faultHistory, store []storedEvent) []storedEvent {
			return append(store, ev(4, "/p", "ok", 1))
		}, "event 1 of request ok stored twice"},
		{"a precondition write of unknown outcome that cannot have happened", func(h *faultHistory, store []storedEvent) []storedEvent {
			h.writes = append(h.writes, writeRecord{req: "twice", n: 1, call: 20, ret: 30, outcome: outcomeUnknown, lin: 1})
			h.lin = append(h.lin, linOp{op: porcupineOp(1, pristine, casOutput{}, 20, 30), write: len(h.writes) - 1})
			return append(store, ev(4, "/s", "twice", 0))
		}, "preconditions: 2 operations are not linearizable"},
		{"an observer skipped an event", func(h *faultHistory, store []storedEvent) []storedEvent {
			h.observers[1] = observer(0, 1, 3)
			return store
		}, "observer 1 on node 0: event at position 2 is id 3"},
		{"an observer fell short", func(h *faultHistory, store []storedEvent) []storedEvent {
			h.observers[0] = observer(0, 1)
			return store
		}, "observer 0 on node 0 received 2 events, the store holds 4"},
	}
	for _, tc := range cases {
		h := clean()
		s := tc.change(h, append([]storedEvent(nil), store...))
		r := checkFaultHistory(h, s, t.TempDir)
		var msgs []string
		for _, a := range r.anomalies {
			msgs = append(msgs, a.msg)
		}
		if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
			t.Errorf("%s: anomalies %q, want one containing %q", tc.name, msgs, tc.want)
		}
	}
}
