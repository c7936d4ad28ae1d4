package pgstore

import (
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/store"
)

// Verifier checks, during store.Verify, what PostgreSQL does not check
// itself: the subject and type columns of every event against its record,
// and the subjects and event_types tables against the events (every name
// listed has events, every name of an event is listed, every tree key is
// store.TreeKey of its subject), the runs of subjects and types against
// the events (runs.checks), and that no schema claims a commit beyond the
// head. PostgreSQL's own indexes are its business (amcheck checks them).
type Verifier struct {
	*Backend
	columns *recordPages // id, subject 0x00 type of every event
}

var (
	_ store.IndexVerifier   = (*Verifier)(nil)
	_ store.IndexVerifiable = (*Backend)(nil)
)

// NewIndexVerifier returns the IndexVerifier of one store.Verify.
func (b *Backend) NewIndexVerifier() store.IndexVerifier { return NewVerifier(b) }

// NewVerifier returns a Verifier over b, to pass to store.Verify.
func NewVerifier(b *Backend) *Verifier {
	sql := logSQL("convert_to(e.subject, 'UTF8') || '\\x00'::bytea || convert_to(e.type, 'UTF8')", "true", false)
	columns := newRecordPages(b.live, b.q, sql, nil, 0, math.MaxUint64, false)
	return &Verifier{Backend: b, columns: columns}
}

// CheckEvent compares the columns of event id with its record's subject
// and type; events come in id order.
func (v *Verifier) CheckEvent(id uint64, subject, eventType string) error {
	if !v.columns.Next() {
		if err := v.columns.Close(); err != nil {
			return err
		}
		return corrupt("event %d has no row", id)
	}
	r := v.columns.Record()
	if want := subject + "\x00" + eventType; r.ID != id || string(r.JSON) != want {
		return corrupt("the row of event %d (id %d) says %q, its record says subject %q and type %q", id, r.ID, r.JSON, subject, eventType)
	}
	return nil
}

// Finish checks the tables of names and the versions of feature state.
func (v *Verifier) Finish() error {
	if err := v.columns.Close(); err != nil {
		return err
	}
	for _, c := range finishChecks {
		ctx, cancel := v.live.timeout()
		var name string
		err := v.q.QueryRow(ctx, c.sql).Scan(&name)
		cancel()
		switch {
		case err == nil:
			return corrupt(c.problem, name)
		case !errors.Is(err, pgx.ErrNoRows):
			return wrap(err, "verify")
		}
	}
	return nil
}

// finishCheck selects the first name that shows a problem, which problem
// formats.
type finishCheck struct{ sql, problem string }

// finishChecks each select the first name that shows a problem.
var finishChecks = append([]finishCheck{
	{"SELECT s.subject FROM eventstore.subjects s WHERE NOT EXISTS (SELECT FROM eventstore.events e WHERE e.subject = s.subject) LIMIT 1",
		"the subjects table lists %q, which has no events"},
	{"SELECT e.subject FROM eventstore.events e WHERE NOT EXISTS (SELECT FROM eventstore.subjects s WHERE s.subject = e.subject) LIMIT 1",
		"the subjects table misses %q, which has events"},
	{"SELECT subject FROM eventstore.subjects WHERE tree_key <> translate(subject, '/', E'\\x01') LIMIT 1",
		"the subjects table has a wrong tree key for %q"},
	{"SELECT t.type FROM eventstore.event_types t WHERE NOT EXISTS (SELECT FROM eventstore.events e WHERE e.type = t.type) LIMIT 1",
		"the event_types table lists %q, of which there are no events"},
	{"SELECT e.type FROM eventstore.events e WHERE NOT EXISTS (SELECT FROM eventstore.event_types t WHERE t.type = e.type) LIMIT 1",
		"the event_types table misses %q, of which there are events"},
	{"SELECT s.space || '/' || s.key FROM eventstore.state s, eventstore.head h WHERE s.version > h.state_count OR s.version < 1 LIMIT 1",
		"the state record %s has a version the head's state changes do not cover"},
}, append(subjectRuns.checks(), typeRuns.checks()...)...)

// checks select the first sign of runs that do not index the events
// exactly: every event lies in a run of its value, no run is empty, and
// the runs hold as many ids as there are events, so none holds an id
// twice, an id of an event of another value or an id without an event.
func (r runs) checks() []finishCheck {
	return []finishCheck{
		{fmt.Sprintf("SELECT e.id::text FROM eventstore.events e WHERE NOT EXISTS (SELECT FROM %[1]s r WHERE r.%[2]s = e.%[2]s AND r.last_id >= e.id AND r.first_id <= e.id) LIMIT 1", r.table, r.key),
			"event %s lies in no run of " + r.table},
		{fmt.Sprintf("SELECT %[2]s FROM %[1]s WHERE first_id > last_id LIMIT 1", r.table, r.key),
			"%q has a run in " + r.table + " that ends before it starts"},
		{fmt.Sprintf("SELECT n::text FROM (SELECT coalesce(sum(last_id - first_id + 1), 0) AS n FROM %s) r WHERE n <> (SELECT count(*) FROM eventstore.events)", r.table),
			"the runs of " + r.table + " hold %s ids, the events table another number of events"},
	}
}

func corrupt(format string, args ...any) error {
	return &store.CorruptionError{Detail: fmt.Sprintf(format, args...)}
}
