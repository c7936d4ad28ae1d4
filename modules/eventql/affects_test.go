package eventql

import (
	"context"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
)

func TestAffects(t *testing.T) {
	written := func(id uint64, subject, eventType, data string) Written {
		_, r := event.Seal(nil, event.Candidate{Source: "https://x", Subject: subject, Type: eventType, Data: []byte(data)},
			id, time.Unix(1_700_000_000, 1), []byte(event.ZeroHash))
		return Written{Record: r, Subject: subject, Type: eventType}
	}
	emit := event.NewEmitter(nil).Append
	cases := []struct {
		query   string
		event   Written
		affects bool
	}{
		{`FROM e IN events WHERE e.subject == "/a" PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{}`), true},
		{`FROM e IN events WHERE e.subject == "/a" PROJECT INTO COUNT() == 0`, written(10, "/b", "t", `{}`), false},
		{`FROM e IN events WHERE e.type == "t" ORDER BY e.id DESC TOP 1 PROJECT INTO e.id == "3"`, written(10, "/b", "t", `{}`), true},
		{`FROM e IN events WHERE e.type == "t" ORDER BY e.id DESC TOP 1 PROJECT INTO e.id == "3"`, written(10, "/b", "u", `{}`), false},
		{`FROM e IN events WHERE e.subject == "/a" AND e.type == "t" PROJECT INTO COUNT() == 0`, written(10, "/a", "u", `{}`), false},
		{`FROM e IN events WHERE STARTSWITH(e.subject, "/books/") PROJECT INTO COUNT() > 1`, written(10, "/books/7", "t", `{}`), true},
		{`FROM e IN events WHERE STARTSWITH(e.subject, "/books/") PROJECT INTO COUNT() > 1`, written(10, "/readers/1", "t", `{}`), false},
		{`FROM e IN events WHERE e.id AS INT < 5 PROJECT INTO COUNT() == 5`, written(10, "/a", "t", `{}`), false},
		// A filter on data rules out events it drops, null included.
		{`FROM e IN events WHERE e.data.amount > 1000 PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{"amount":5}`), false},
		{`FROM e IN events WHERE e.data.amount > 1000 PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{"amount":5000}`), true},
		{`FROM e IN events WHERE e.data.amount > 1000 PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{"other":1}`), false},
		// A conjunct that fails may hold on the state it commits on: affected.
		{`FROM e IN events WHERE e.data.n / 0 == 1 PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{"n":1}`), true},
		// Random numbers decide nothing in advance.
		{`FROM e IN events WHERE RAND() > 2 PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{}`), true},
		// Every event counts for a count over all.
		{`FROM e IN events PROJECT INTO COUNT() == 0`, written(10, "/z", "z", `{}`), true},
		// Subjects and event types change with any event.
		{`FROM s IN subjects PROJECT INTO COUNT() == 3`, written(10, "/z", "z", `{}`), true},
		{`FROM t IN eventtypes PROJECT INTO COUNT() == 3`, written(10, "/z", "z", `{}`), true},
		// Subqueries and products: any source that admits the event.
		{`FROM x IN (FROM e IN events WHERE e.type == "t" PROJECT INTO e) PROJECT INTO COUNT() == 0`, written(10, "/a", "t", `{}`), true},
		{`FROM x IN (FROM e IN events WHERE e.type == "t" PROJECT INTO e) PROJECT INTO COUNT() == 0`, written(10, "/a", "u", `{}`), false},
		{`FROM a IN events FROM b IN events WHERE a.type == "x" AND b.type == "y" PROJECT INTO COUNT() == 0`, written(10, "/a", "y", `{}`), true},
		{`FROM a IN events FROM b IN events WHERE a.type == "x" AND b.type == "y" PROJECT INTO COUNT() == 0`, written(10, "/a", "z", `{}`), false},
		{`FROM a IN events FROM b IN events WHERE a.type == "x" OR b.type == "y" PROJECT INTO COUNT() == 0`, written(10, "/a", "z", `{}`), true},
	}
	for _, tc := range cases {
		p, err := Compile(tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if got := p.Affects(tc.event, emit); got != tc.affects {
			t.Errorf("%s\nwith event %d %s %s %s: affects %v, want %v", tc.query, tc.event.Record.ID, tc.event.Subject, tc.event.Type, tc.event.Record.JSON, got, tc.affects)
		}
	}
}

func TestReadsSchemas(t *testing.T) {
	for query, want := range map[string]bool{
		`FROM e IN events PROJECT INTO COUNT() == 0`:                                                 false,
		`FROM t IN eventtypes PROJECT INTO COUNT() == 0`:                                             true,
		`FROM x IN (FROM t IN eventtypes PROJECT INTO t) PROJECT INTO COUNT() == 0`:                  true,
		`FROM s IN subjects FROM e IN events WHERE e.subject == s.subject PROJECT INTO COUNT() == 0`: false,
	} {
		p, err := Compile(query)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ReadsSchemas(); got != want {
			t.Errorf("%s: reads schemas %v, want %v", query, got, want)
		}
	}
}

// TestAffecterReadsKeys: after a run through a data index, an event that
// index keyed at its commit is affecting only if it has a key the run
// looked up (its value's, or a kind it fails on) within the lookup's id
// range; one whose keys are unknown is tested as without the index.
func TestAffecterReadsKeys(t *testing.T) {
	const index = 7
	written := func(id uint64, data string, keyed bool, keys ...dataindex.Key) Written {
		_, r := event.Seal(nil, event.Candidate{Source: "https://x", Subject: "/s", Type: "t", Data: []byte(data)},
			id, time.Unix(1_700_000_000, 1), []byte(event.ZeroHash))
		w := Written{Record: r, Subject: "/s", Type: "t"}
		if keyed {
			w.Keyed = []dataindex.Keyed{{Index: index, Keys: keys}, {Index: index + 1, Keys: []dataindex.Key{dataindex.String("c1")}}}
		}
		return w
	}
	const query = `FROM e IN events WHERE e.type == "t" AND e.data.tags CONTAINS "c1" AND (e.id AS INT + 1) > 11 PROJECT INTO COUNT() == 0`
	p, err := Compile(query)
	if err != nil {
		t.Fatal(err)
	}
	emit := event.NewEmitter(nil).Append
	indexes := []DataIndex{{ID: index, Path: "/tags"}}
	cases := []struct {
		name    string
		event   Written
		affects bool
	}{
		{"keyed c1", written(20, `{"tags":["c1"]}`, true, dataindex.String("c1"), dataindex.ArrayKind), true},
		// Data that would match, keys that say otherwise: the keys decide,
		// the data is not looked at.
		{"keyed c2 only", written(20, `{"tags":["c1"]}`, true, dataindex.String("c2"), dataindex.ArrayKind), false},
		{"a failure kind", written(20, `{"tags":"c1"}`, true, dataindex.StringKind), true},
		{"before the position", written(5, `{"tags":["c1"]}`, true, dataindex.String("c1"), dataindex.ArrayKind), false},
		{"keys unknown, data of c2", written(20, `{"tags":["c2"]}`, false), false},
		{"keys unknown, data of c1", written(20, `{"tags":["c1"]}`, false), true},
	}
	// The Affecter a run hands over (Options.Affecter) is planned as the run
	// was: with the index the database offered.
	var ran *Affecter
	if _, err := p.Run(context.Background(), indexedDB{emitOnly(emit), indexes}, Options{Affecter: func(a *Affecter) { ran = a }},
		func(Value) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		if got := ran.Affects(tc.event); got != tc.affects {
			t.Errorf("%s: affects %v, want %v", tc.name, got, tc.affects)
		}
	}
	// Without the index the run read the data: the keys are not consulted.
	if !p.Affecter(emit).Affects(written(20, `{"tags":["c1"]}`, true, dataindex.String("c2"))) {
		t.Error("a run without the index: an event of c1 keyed otherwise does not affect it")
	}
}

// indexedDB is an empty database that offers data indexes.
type indexedDB struct {
	emitOnly
	indexes []DataIndex
}

func (indexedDB) Events(context.Context, Selection, func(event.Record) bool) error { return nil }
func (db indexedDB) DataIndexes() []DataIndex                                      { return db.indexes }
