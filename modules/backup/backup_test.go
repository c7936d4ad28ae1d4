package backup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/backup"
	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/restore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// storeWithEvents returns a store of varied events: trace fields,
// non-ASCII and HTML-escaped data, big numbers.
func storeWithEvents(t *testing.T) *store.Store {
	t.Helper()
	s := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	t.Cleanup(func() { storetest.Close(t, s) })
	var cs []event.Candidate
	for i := 0; i < 30; i++ {
		c := event.Candidate{Source: "https://x.example", Subject: fmt.Sprintf("/books/%d", i%4), Type: "io.example.thing",
			Data: []byte(fmt.Sprintf(`{"n":%d,"text":"Grüße \u003ca\u0026b\u003e","views":12345678901234567890}`, i))}
		if i%3 == 0 {
			c.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			c.TraceState = "rojo=00f067aa0ba902b7"
		}
		cs = append(cs, c)
	}
	if _, err := s.Write(context.Background(), cs, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// backupLines returns the backup of s as lines, with one schema line.
func backupLines(t *testing.T, s *store.Store) []string {
	t.Helper()
	var out []string
	var sc jsonscan.Scanner
	it := s.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for it.Next() {
		line, err := backup.AppendEvent(nil, it.Record(), &sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(line))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return append(out, string(backup.AppendSchema(nil, "io.example.thing", []byte(`{"type":"object","properties":{}}`))))
}

// readAll reads a backup to its end: the events' records and the error.
func readAll(in string) ([]string, int, error) {
	r := backup.NewReader(strings.NewReader(in), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20})
	var records []string
	schemas := 0
	for {
		item, err := r.Next()
		if err == io.EOF {
			return records, schemas, nil
		}
		if err != nil {
			return records, schemas, err
		}
		if item.Event != nil {
			records = append(records, string(item.Event.Record.JSON))
		} else {
			schemas++
		}
	}
}

func TestRoundTrip(t *testing.T) {
	s := storeWithEvents(t)
	lines := backupLines(t, s)
	first := lines[0]
	if !strings.HasPrefix(first, `{"type":"event","payload":{"event":{"specversion":"1.0","id":"0","time":"`) ||
		!strings.Contains(first, `"datacontenttype":"application/json","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"rojo=00f067aa0ba902b7","predecessorhash":"0000000000000000000000000000000000000000000000000000000000000000","data":{"n":0,"text":"Grüße \u003ca\u0026b\u003e","views":12345678901234567890}},"hash":"`) {
		t.Fatalf("event line: %s", first)
	}
	records, schemas, err := readAll(strings.Join(lines, ""))
	if err != nil || len(records) != 30 || schemas != 1 {
		t.Fatalf("read %d events, %d schemas: %v", len(records), schemas, err)
	}
	it := s.Scan(store.Scan{From: 0, To: math.MaxUint64})
	for i := 0; it.Next(); i++ {
		if records[i] != string(it.Record().JSON) {
			t.Fatalf("event %d reads back as\n%s\nnot\n%s", i, records[i], it.Record().JSON)
		}
	}
	it.Close()
}

// TestPayloadBeforeType reads lines whose members come in the other order,
// as a JSON tool may rewrite them.
func TestPayloadBeforeType(t *testing.T) {
	s := storeWithEvents(t)
	lines := backupLines(t, s)
	want, _, err := readAll(strings.Join(lines, ""))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		var l struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		lines[i] = `{"payload":` + string(l.Payload) + `,"type":"` + l.Type + `"}` + "\n"
	}
	got, schemas, err := readAll(strings.Join(lines, ""))
	if err != nil || schemas != 1 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read %d events and %d schemas: %v", len(got), schemas, err)
	}
}

func TestBadBackupsAreRefusedAtTheirLine(t *testing.T) {
	lines := backupLines(t, storeWithEvents(t))
	replace := func(i int, old, new string) []string {
		out := append([]string(nil), lines...)
		out[i] = strings.Replace(out[i], old, new, 1)
		return out
	}
	flipped := append([]string(nil), lines...)
	flipped[5] = strings.Replace(flipped[5], `"n":5`, `"n":6`, 1)
	dataArray := append([]string(nil), lines...)
	dataArray[2] = regexp.MustCompile(`"data":\{.*\}\},"hash"`).ReplaceAllString(dataArray[2], `"data":[2]},"hash"`)
	refusedAt(t, []refusal{
		{"a changed byte in data", flipped, false, 6, "does not match the event"},
		{"a broken link", replace(7, `"predecessorhash":"`, `"predecessorhash":"f`), false, 8, "is not the hash"},
		{"a missing line", append(append([]string(nil), lines[:10]...), lines[11:]...), false, 11, "event 11 where event 10 was due"},
		{"lines in another order", append(append(append([]string(nil), lines[:3]...), lines[4], lines[3]), lines[5:]...), false, 4, "event 4 where event 3 was due"},
		{"an error line", append(append([]string(nil), lines[:12]...), `{"type":"error","payload":{"error":"internal error: storage read failed"}}`+"\n"), false, 13, "an error line"},
		{"a cut-off file", lines, true, 31, "cut off"},
		{"an unknown line type", append([]string{`{"type":"comment","payload":{}}` + "\n"}, lines...), false, 1, `unknown line type "comment"`},
		{"data not canonical", replace(2, `{"n":2,`, `{"n": 2,`), false, 3, "not in canonical form"},
		{"an event after the schemas", append(append([]string(nil), lines...), lines[0]), false, 32, "an event after the schemas"},
		{"malformed JSON", replace(4, `{"type":"event"`, `{"type":"event",`), false, 5, "malformed line"},
		{"malformed data", replace(4, `{"n":4,`, `{"n":4,,`), false, 5, "malformed event line"},
		{"a number out of range in data", replace(2, `{"n":2,`, `{"n":1e999,`), false, 3, "invalid data: number 1e999 is out of range"},
		{"data not an object", dataArray, false, 3, "data must be a JSON object"},
		{"an unknown member of the event", replace(2, `"specversion"`, `"color":"red","specversion"`), false, 3, `unknown member "color" of the event`},
	})
}

// refusal is a backup that the Reader must refuse at a line (the last 20
// bytes cut off if cut), with detail in its error.
type refusal struct {
	name   string
	lines  []string
	cut    bool
	line   int
	detail string
}

// refusedAt reads each backup of cases as a subtest and checks its refusal.
func refusedAt(t *testing.T, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join(tc.lines, "")
			if tc.cut {
				in = in[:len(in)-20]
			}
			_, _, err := readAll(in)
			var backupErr *restore.BackupError
			if !errors.As(err, &backupErr) || backupErr.Line != tc.line || !strings.Contains(backupErr.Detail, tc.detail) {
				t.Fatalf("error %v, want line %d: …%s…", err, tc.line, tc.detail)
			}
		})
	}
}

func TestRestoreFromABackup(t *testing.T) {
	source := storeWithEvents(t)
	in := strings.Join(backupLines(t, source), "")
	target := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, target)
	restored, err := restore.Into(context.Background(), target, backup.NewReader(bytes.NewReader([]byte(in)), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20}), restore.Hooks{}, zap.NewNop())
	if err != nil || restored.Events != 30 || restored.Schemas != 1 {
		t.Fatalf("restored %+v: %v", restored, err)
	}
	if string(backupLines(t, target)[29]) != string(backupLines(t, source)[29]) {
		t.Fatal("the restored store backs up differently")
	}
}

// endless is a line that never ends; it counts the bytes read of it.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += len(p)
	return len(p), nil
}

// TestLineLongerThanAnyValidOne: a line longer than the longest valid one
// is refused as soon as it is, without reading (or keeping) the rest.
func TestLineLongerThanAnyValidOne(t *testing.T) {
	limits := backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 4 << 20}
	if got, want := limits.MaxLine(), 4<<20+64<<10; got != want {
		t.Fatalf("MaxLine %d, want %d", got, want)
	}
	in := &endless{}
	_, err := backup.NewReader(io.MultiReader(strings.NewReader("\n"), in), limits).Next()
	var backupErr *restore.BackupError
	if !errors.As(err, &backupErr) || backupErr.Line != 2 || backupErr.Detail != fmt.Sprintf("the line is longer than the limit of %d bytes", limits.MaxLine()) {
		t.Fatalf("an endless line: %v", err)
	}
	if in.read > limits.MaxLine()+2<<20 {
		t.Fatalf("read %d bytes of an endless line, the limit is %d", in.read, limits.MaxLine())
	}
}

// withSubscription returns a backup of s with one schema line and the line
// of a subscription of /books with 2 partitions, settled up to event 11 in
// both.
func withSubscription(t *testing.T, s *store.Store) ([]string, subscriptions.Info) {
	t.Helper()
	m := subscriptions.NewManager(s, 10)
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	defer m.Stop(context.Background())
	d := subscriptions.Definition{Name: "billing", Subject: "/books", Options: subscriptions.Defaults()}
	d.Options.Recursive, d.Options.Partitions, d.Options.MaxInFlight = true, 2, 12
	d.Options.EventTypes = []string{"io.example.thing"}
	if _, err := m.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	c, err := m.Connect(context.Background(), "billing", "w1")
	if err != nil {
		t.Fatal(err)
	}
	delivered, _, err := m.Poll(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var tokens []subscriptions.Token
	for _, d := range delivered {
		if d.Token.EventID <= 11 {
			tokens = append(tokens, d.Token)
		}
	}
	if settled, err := m.Settle(context.Background(), subscriptions.Settle{Subscription: "billing", Tokens: tokens}); err != nil || settled.Done != 12 {
		t.Fatalf("settled %+v of %d deliveries: %v", settled, len(delivered), err)
	}
	info, err := m.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	return append(backupLines(t, s), string(subscriptions.AppendBackup(nil, info, s.Durable()))), info
}

func TestRestoreSubscriptions(t *testing.T) {
	lines, info := withSubscription(t, storeWithEvents(t))
	if got := lines[len(lines)-1]; !strings.HasPrefix(got, `{"type":"subscription","payload":{"subscription":"billing","subject":"/books","options":{"recursive":true,"eventTypes":["io.example.thing"],"start":"beginning","partitions":2,"maxInFlight":12,"acknowledgeTimeout":"30s","maxDeliveries":10},"partitions":[{"partition":0,"position":"`) {
		t.Fatalf("subscription line: %s", got)
	}
	target := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, target)
	restored, err := restore.Into(context.Background(), target, backup.NewReader(strings.NewReader(strings.Join(lines, "")), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20}), restore.Hooks{}, zap.NewNop())
	if err != nil || restored.Events != 30 || restored.Schemas != 1 || restored.States != 1 {
		t.Fatalf("restored %+v: %v", restored, err)
	}
	m := subscriptions.NewManager(target, 10)
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	defer m.Stop(context.Background())
	got, err := m.Get("billing")
	if err != nil || !got.Definition.Same(info.Definition) || got.InFlight != 0 {
		t.Fatalf("restored subscription %+v: %v", got, err)
	}
	for i, p := range got.Partitions {
		if want := info.Partitions[i]; p.HasPosition != want.HasPosition || p.Position != want.Position || p.Epoch != 0 {
			t.Fatalf("partition %d restored as %+v, backed up as %+v", i, p, want)
		}
	}
	c, err := m.Connect(context.Background(), "billing", "w2")
	if err != nil {
		t.Fatal(err)
	}
	delivered, _, err := m.Poll(context.Background(), c)
	if err != nil || len(delivered) != 18 || delivered[0].Token.EventID <= 11 {
		t.Fatalf("after the restore %d deliveries, the first %+v: %v", len(delivered), delivered, err)
	}
}

func TestBadSubscriptionLinesAreRefused(t *testing.T) {
	lines, _ := withSubscription(t, storeWithEvents(t))
	sub := lines[len(lines)-1]
	edit := func(old, new string) []string {
		return append(append([]string(nil), lines[:len(lines)-1]...), regexp.MustCompile(old).ReplaceAllString(sub, new))
	}
	cases := []refusal{
		{"an event after a subscription", append(append(append([]string(nil), lines[:29]...), sub), lines[29]), false, 31, "an event after the subscriptions"},
		{"a schema after a subscription", append(append(append([]string(nil), lines[:30]...), sub), lines[30]), false, 32, "a schema after the subscriptions"},
		{"a position beyond the events", edit(`"position":"11"`, `"position":"30"`), false, 32, "at event 30, beyond the backup's events"},
		{"an invalid position", edit(`"position":"11"`, `"position":"x"`), false, 32, "invalid position 'x'"},
		{"an unknown option", edit(`"maxDeliveries":10`, `"maxDeliveries":10,"color":1`), false, 32, "malformed options"},
		{"an invalid option", edit(`"partitions":2`, `"partitions":0`), false, 32, "partitions must be 1 to 1024"},
		{"a partition missing", edit(`\{"partition":0,"position":"\d+"\},`, ``), false, 32, "1 partitions listed, 2 defined"},
		{"a partition twice", edit(`{"partition":1,`, `{"partition":0,`), false, 32, "partition 0 listed twice"},
		{"an invalid name", edit(`"subscription":"billing"`, `"subscription":"a/b"`), false, 32, "invalid name"},
		{"an unknown member", edit(`"subject":"/books"`, `"subject":"/books","lag":3`), false, 32, "malformed subscription line"},
	}
	refusedAt(t, cases)
	two := append(append([]string(nil), lines...), strings.Replace(sub, `"subscription":"billing"`, `"subscription":"billing2"`, 1))
	limited := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, limited)
	_, err := restore.Into(context.Background(), limited,
		backup.NewReader(strings.NewReader(strings.Join(two, "")), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20, MaxSubscriptions: 1}), restore.Hooks{}, zap.NewNop())
	var limitErr *restore.BackupError
	if !errors.As(err, &limitErr) || limitErr.Line != 33 || limitErr.Detail != "too many subscriptions (the limit is 1)" {
		t.Fatalf("two subscriptions beyond a limit of one: %v", err)
	}
	twice := append(append([]string(nil), lines...), sub)
	target := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, target)
	_, err = restore.Into(context.Background(), target, backup.NewReader(strings.NewReader(strings.Join(twice, "")), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20}), restore.Hooks{}, zap.NewNop())
	var backupErr *restore.BackupError
	if !errors.As(err, &backupErr) || backupErr.Line != 33 || !strings.Contains(backupErr.Detail, "subscriptions billing appears twice") {
		t.Fatalf("a subscription twice: %v", err)
	}
	if target.Durable() != 0 {
		t.Fatal("a refused restore left events")
	}
}

// TestDataIndexLines writes data index lines after the schemas, reads
// them back into a restore that registers them built, and refuses bad ones
// at their line.
func TestDataIndexLines(t *testing.T) {
	lines := backupLines(t, storeWithEvents(t))
	def := dataindex.Definition{Name: "byN", Path: "/n", EventTypes: []string{"io.example.thing"}}
	line := string(backup.AppendDataIndex(nil, def))
	if want := `{"type":"dataIndex","payload":{"name":"byN","path":"/n","eventTypes":["io.example.thing"]}}` + "\n"; line != want {
		t.Fatalf("data index line %s, want %s", line, want)
	}
	all := string(backup.AppendDataIndex(nil, dataindex.Definition{Name: "all", Path: "/n"}))
	if want := `{"type":"dataIndex","payload":{"name":"all","path":"/n"}}` + "\n"; all != want {
		t.Fatalf("data index line of all types %s, want %s", all, want)
	}
	with := append(append([]string(nil), lines...), line, all)
	target := storetest.Start(t, storetest.PebbleAt(t.TempDir(), nil))
	defer storetest.Close(t, target)
	restored, err := restore.Into(context.Background(), target, backup.NewReader(strings.NewReader(strings.Join(with, "")), backup.Limits{MaxEventSize: 1 << 20, MaxSchemaSize: 1 << 20}), restore.Hooks{}, zap.NewNop())
	if err != nil || restored.Events != 30 || restored.Schemas != 1 || restored.DataIndexes != 2 {
		t.Fatalf("restored %+v: %v", restored, err)
	}
	indexes, _, err := target.DataIndexes()
	if err != nil || len(indexes) != 2 || !indexes[1].Same(def) || !indexes[1].Ready() || indexes[0].EventTypes != nil {
		t.Fatalf("restored indexes %+v: %v", indexes, err)
	}

	edit := func(old, new string) []string {
		return append(append([]string(nil), lines...), strings.Replace(line, old, new, 1))
	}
	cases := []refusal{
		{"an event after a data index", append(append(append([]string(nil), lines[:29]...), line), lines[29]), false, 31, "an event after the data indexes"},
		{"a schema after a data index", append(append(append([]string(nil), lines[:30]...), line), lines[30]), false, 32, "a schema after the data indexes"},
		{"an unknown member", edit(`"path"`, `"state":"ready","path"`), false, 32, "malformed data index line"},
		{"an invalid path", edit(`"/n"`, `"n"`), false, 32, "invalid path 'n'"},
		{"an invalid name", edit(`"byN"`, `"a/b"`), false, 32, "invalid name"},
		{"an invalid event type", edit(`"io.example.thing"`, `"x y"`), false, 32, "invalid event type"},
	}
	refusedAt(t, cases)
}
