package e2e

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The sequential specification the linearizability test checks the real
// binary against: every subject is a compare-and-set register holding the id
// of its latest event (none = -1). Reads return it, writes with a precondition
// are compare-and-set operations on it, and every write that happens moves it
// to the last id it was assigned, which must be above the current one (ids are
// assigned in commit order). Subjects are independent, so the history is
// partitioned by subject.

// casKind is what one operation does.
type casKind int

const (
	casRead        casKind = iota // read-events, antichronological, first line
	casReadLatest                 // read-events with fromLatestEvent
	casWrite                      // write without a precondition
	casPristine                   // isSubjectPristine
	casPristineQL                 // isEventQlQueryTrue: COUNT() == 0 on the subject
	casPopulated                  // isSubjectPopulated
	casOnEventID                  // isSubjectOnEventId
	casOnEventIDQL                // isEventQlQueryTrue: latest id on the subject == Expect
	casKinds                      // number of kinds
)

var casKindNames = [casKinds]string{"read", "readLatest", "write", "pristine", "pristineQL", "populated", "onEventId", "onEventIdQL"}

func (k casKind) String() string { return casKindNames[k] }

func (k casKind) isRead() bool { return k == casRead || k == casReadLatest }

// casInput is an operation's request.
type casInput struct {
	Subject string
	Kind    casKind
	Expect  int64 // casOnEventID, casOnEventIDQL: the expected latest id
}

// casOutput is an operation's answer: for a read the latest id it saw, for
// a write whether it happened (200) or not (409) and the ids it was given.
type casOutput struct {
	Latest      int64 // reads; -1 for none
	Written     bool  // writes: 200
	First, Last int64 // writes that happened: the ids assigned
}

// holds says whether a write's precondition holds on state.
func (in casInput) holds(state int64) bool {
	switch in.Kind {
	case casPristine, casPristineQL:
		return state == -1
	case casPopulated:
		return state != -1
	case casOnEventID, casOnEventIDQL:
		return state != -1 && state == in.Expect
	}
	return true
}

// partitionBy returns a porcupine Partition that splits a history by the
// key of each operation, in key order.
func partitionBy[K cmp.Ordered](key func(porcupine.Operation) K) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[K][]porcupine.Operation{}
		for _, op := range history {
			byKey[key(op)] = append(byKey[key(op)], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			out = append(out, byKey[k])
		}
		return out
	}
}

// casModel is the per-subject compare-and-set model.
var casModel = porcupine.Model{
	Partition: partitionBy(func(op porcupine.Operation) string { return op.Input.(casInput).Subject }),
	Init:      func() any { return int64(-1) },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(int64), input.(casInput), output.(casOutput)
		if in.Kind.isRead() {
			return out.Latest == st, st
		}
		if !out.Written {
			return !in.holds(st), st
		}
		return in.holds(st) && out.First > st && out.Last >= out.First, out.Last
	},
	Hash: func(state any) uint64 { return uint64(state.(int64) + 1) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(casInput), output.(casOutput)
		switch {
		case in.Kind.isRead():
			return fmt.Sprintf("%s(%s) -> %s", in.Kind, in.Subject, idText(out.Latest))
		case !out.Written:
			return fmt.Sprintf("%s -> 409", describeInput(in))
		case out.First == out.Last:
			return fmt.Sprintf("%s -> %d", describeInput(in), out.Last)
		}
		return fmt.Sprintf("%s -> %d..%d", describeInput(in), out.First, out.Last)
	},
	DescribeState: func(state any) string { return "latest id is " + idText(state.(int64)) },
}

func describeInput(in casInput) string {
	if in.Kind == casOnEventID || in.Kind == casOnEventIDQL {
		return fmt.Sprintf("%s(%s, %d)", in.Kind, in.Subject, in.Expect)
	}
	return fmt.Sprintf("%s(%s)", in.Kind, in.Subject)
}

func idText(id int64) string {
	if id < 0 {
		return "none"
	}
	return fmt.Sprint(id)
}

// linearizabilityTimeout bounds the checker; a history it cannot decide in
// time fails as Unknown. The histories here take milliseconds.
const linearizabilityTimeout = 30 * time.Second

// linearizabilityReport checks history against casModel. It returns "" if
// the history is linearizable, else a failure message that explains, for the
// first subjects whose history is not, where the model got stuck, and names
// the visualization it wrote into artifacts().
func linearizabilityReport(history []porcupine.Operation, artifacts func() string) string {
	return modelReport(casModel, "subjects", func(op porcupine.Operation) string { return op.Input.(casInput).Subject }, history, artifacts)
}

// modelReport checks history against model, whose partitions part names
// (of what): "" if it is linearizable, else what linearizabilityReport
// says.
func modelReport(model porcupine.Model, of string, part func(porcupine.Operation) string, history []porcupine.Operation, artifacts func() string) string {
	res, info := porcupine.CheckOperationsVerbose(model, history, linearizabilityTimeout)
	if res == porcupine.Ok {
		return ""
	}
	path := filepath.Join(artifacts(), "linearizability.html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		path += " (not written: " + err.Error() + ")"
	}
	if res != porcupine.Illegal {
		return fmt.Sprintf("checker could not decide within %s whether %d operations are linearizable (%s); visualization: %s", linearizabilityTimeout, len(history), res, path)
	}
	parts := model.Partition(history)
	var bad []string
	for p, partials := range info.PartialLinearizationsOperations() {
		if msg := explainPartition(model, part, parts[p], partials); msg != "" {
			bad = append(bad, msg)
		}
	}
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more %s", len(bad)-3, of))
	}
	return fmt.Sprintf("%d operations are not linearizable: on some %s no order of the operations that respects real time is a sequence of the model's steps. %s. Visualization: %s",
		len(history), of, strings.Join(bad, "; "), path)
}

// explainPartition returns "" if the longest legal order porcupine found
// covers all ops of one subject, else where the model got stuck: the state
// after that order and the earliest-returning operation left out of it.
func explainPartition(model porcupine.Model, part func(porcupine.Operation) string, ops []porcupine.Operation, partials [][]porcupine.Operation) string {
	var longest []porcupine.Operation
	for _, l := range partials {
		if len(l) > len(longest) {
			longest = l
		}
	}
	if len(longest) == len(ops) {
		return ""
	}
	type key struct {
		client int
		call   int64
	}
	state, placed := model.Init(), map[key]bool{}
	for _, op := range longest {
		_, state = model.Step(state, op.Input, op.Output)
		placed[key{op.ClientId, op.Call}] = true
	}
	var next porcupine.Operation
	for _, op := range ops {
		if !placed[key{op.ClientId, op.Call}] && (next.Input == nil || op.Return < next.Return) {
			next = op
		}
	}
	return fmt.Sprintf("%s: after %d of %d operations in a legal order the %s, and none of the %d left can come next, among them client %d's %s (called at %s, returned at %s)",
		part(next), len(longest), len(ops), model.DescribeState(state), len(ops)-len(longest),
		next.ClientId, model.DescribeOperation(next.Input, next.Output), time.Duration(next.Call), time.Duration(next.Return))
}

// artifactDir is where failure artifacts go: $E2E_ARTIFACTS, or a fresh
// directory under the system's temp directory that outlives the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("E2E_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "eventstore-linearizability-*")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLinearizableModel feeds the model hand-made histories, so that the
// end-to-end test is known to catch what it is meant to catch.
func TestLinearizableModel(t *testing.T) {
	op := func(client int, call, ret int64, in casInput, out casOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
	}
	cases := []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"read concurrent with the first write sees either state", []porcupine.Operation{
			op(0, 0, 10, casInput{Subject: "/a", Kind: casPristine}, casOutput{Written: true, First: 0, Last: 1}),
			op(1, 2, 4, casInput{Subject: "/a", Kind: casReadLatest}, casOutput{Latest: -1}),
			op(2, 5, 12, casInput{Subject: "/a", Kind: casReadLatest}, casOutput{Latest: 1}),
			op(1, 13, 14, casInput{Subject: "/a", Kind: casOnEventIDQL, Expect: 1}, casOutput{Written: true, First: 2, Last: 2}),
		}, true},
		{"stale read after a write returned", []porcupine.Operation{
			op(0, 0, 10, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 5, Last: 5}),
			op(1, 20, 30, casInput{Subject: "/a", Kind: casRead}, casOutput{Latest: -1}),
		}, false},
		{"lost update: two concurrent writes on the same id both succeed", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 3, Last: 3}),
			op(1, 2, 10, casInput{Subject: "/a", Kind: casOnEventID, Expect: 3}, casOutput{Written: true, First: 4, Last: 4}),
			op(2, 2, 10, casInput{Subject: "/a", Kind: casOnEventID, Expect: 3}, casOutput{Written: true, First: 5, Last: 5}),
		}, false},
		{"one of two concurrent writes on the same id wins", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 3, Last: 3}),
			op(1, 2, 10, casInput{Subject: "/a", Kind: casOnEventID, Expect: 3}, casOutput{Written: true, First: 4, Last: 4}),
			op(2, 2, 10, casInput{Subject: "/a", Kind: casOnEventIDQL, Expect: 3}, casOutput{}),
		}, true},
		{"pristine refused on a pristine subject", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casPristineQL}, casOutput{}),
		}, false},
		{"populated accepted on a pristine subject", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casPopulated}, casOutput{Written: true, First: 0, Last: 0}),
		}, false},
		{"a write without a precondition refused", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casWrite}, casOutput{}),
		}, false},
		{"ids going back in commit order", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 7, Last: 7}),
			op(1, 2, 3, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 6, Last: 6}),
		}, false},
		{"a conflict where the expected id was the latest", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 7, Last: 7}),
			op(0, 2, 3, casInput{Subject: "/a", Kind: casOnEventID, Expect: 7}, casOutput{}),
		}, false},
		{"subjects are independent; one bad subject fails the history", []porcupine.Operation{
			op(0, 0, 1, casInput{Subject: "/a", Kind: casWrite}, casOutput{Written: true, First: 0, Last: 0}),
			op(1, 0, 1, casInput{Subject: "/b", Kind: casWrite}, casOutput{Written: true, First: 1, Last: 1}),
			op(0, 2, 3, casInput{Subject: "/a", Kind: casRead}, casOutput{Latest: 0}),
			op(1, 2, 3, casInput{Subject: "/b", Kind: casRead}, casOutput{Latest: 0}),
		}, false},
	}
	for _, tc := range cases {
		if got := porcupine.CheckOperations(casModel, tc.history); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}

	// A failing check names the subject and leaves a visualization.
	dir := t.TempDir()
	msg := linearizabilityReport(cases[len(cases)-1].history, func() string { return dir })
	path := filepath.Join(dir, "linearizability.html")
	if want := "/b: after 1 of 2 operations in a legal order the latest id is 1, and none of the 1 left can come next, among them client 1's read(/b) -> 0 (called at 2ns, returned at 3ns). Visualization: " + path; !strings.HasSuffix(msg, want) {
		t.Errorf("report %q does not end in %q", msg, want)
	}
	if html, err := os.ReadFile(path); err != nil || !strings.Contains(string(html), "/b") {
		t.Errorf("visualization %s: %v", path, err)
	}
	if msg := linearizabilityReport(cases[0].history, t.TempDir); msg != "" {
		t.Errorf("report on a linearizable history: %q", msg)
	}
}
