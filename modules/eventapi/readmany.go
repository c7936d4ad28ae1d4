package eventapi

import (
	"regexp"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/eventql"
)

// manyEvents is how many events a precondition query may load before the
// service warns about it (docs/api.md §4.15).
const manyEvents = 10_000

// readManyEvery is how often at most one shape of precondition query is
// warned about.
const readManyEvery = time.Minute

// maxShapes bounds the shapes a readMany remembers.
const maxShapes = 1024

// readMany warns about precondition queries that load many events, at most
// once a readManyEvery per query shape (the query with its literals
// replaced by ?), naming the data paths an index could serve them by.
type readMany struct {
	log  *zap.Logger
	now  func() time.Time
	mu   sync.Mutex
	last map[string]time.Time // by shape
}

func newReadMany(log *zap.Logger) *readMany {
	return &readMany{log: log, now: time.Now, last: map[string]time.Time{}}
}

// literals matches the string and number literals of a query.
var literals = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b`)

// shapeOf returns query with its literals replaced by ?.
func shapeOf(query string) string { return literals.ReplaceAllString(query, "?") }

// ran takes the stats of a run of program as a precondition.
func (r *readMany) ran(program *eventql.Program, stats eventql.Stats) {
	if stats.EventsLoaded <= manyEvents {
		return
	}
	shape := shapeOf(program.Text())
	now := r.now()
	r.mu.Lock()
	if last, ok := r.last[shape]; ok && now.Sub(last) < readManyEvery {
		r.mu.Unlock()
		return
	}
	if len(r.last) >= maxShapes {
		clear(r.last)
	}
	r.last[shape] = now
	r.mu.Unlock()
	r.log.Warn("precondition query read many events", zap.String("query", shape), zap.Int64("eventsRead", stats.EventsLoaded),
		zap.Strings("dataIndexPaths", program.DataPaths()))
}
