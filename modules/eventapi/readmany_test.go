package eventapi

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/eventstore-service/eventstore/modules/eventql"
)

// TestReadManyWarnsOncePerShape warns about a precondition query that
// loaded more than 10,000 events once a minute per shape: the same query
// with other literals is the same shape.
func TestReadManyWarnsOncePerShape(t *testing.T) {
	core, logs := zapobserver.New(zapcore.WarnLevel)
	r := newReadMany(zap.New(core))
	now := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	compile := func(q string) *eventql.Program {
		p, err := eventql.Compile(q)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	course := func(c string) *eventql.Program {
		return compile(`FROM e IN events WHERE e.type == "io.x.enrolled" AND e.data.tags CONTAINS "` + c + `" AND (e.id AS INT + 1) > 41 PROJECT INTO COUNT() == 0`)
	}
	r.ran(course("course:1"), eventql.Stats{EventsLoaded: 10_000}) // not many
	r.ran(course("course:1"), eventql.Stats{EventsLoaded: 10_001})
	r.ran(course("course:2"), eventql.Stats{EventsLoaded: 50_000}) // the same shape, within the minute
	r.ran(compile(`FROM e IN events WHERE e.data.reader == "r1" PROJECT INTO COUNT() < 3`), eventql.Stats{EventsLoaded: 20_000})
	now = now.Add(time.Minute)
	r.ran(course("course:3"), eventql.Stats{EventsLoaded: 30_000})
	entries := logs.All()
	if len(entries) != 3 {
		t.Fatalf("%d warnings, want 3: %+v", len(entries), entries)
	}
	first := entries[0].ContextMap()
	if entries[0].Message != "precondition query read many events" || first["eventsRead"] != int64(10_001) ||
		first["query"] != `FROM e IN events WHERE e.type == ? AND e.data.tags CONTAINS ? AND (e.id AS INT + ?) > ? PROJECT INTO COUNT() == ?` {
		t.Fatalf("first warning: %s %v", entries[0].Message, first)
	}
	if paths := entries[1].ContextMap()["dataIndexPaths"]; len(paths.([]interface{})) != 1 || paths.([]interface{})[0] != "/reader" {
		t.Fatalf("second warning's paths: %v", paths)
	}
}
