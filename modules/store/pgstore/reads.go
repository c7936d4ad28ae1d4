package pgstore

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Everything below the committed head is immutable, so reads need no
// transaction: each statement sees at least what was committed when it
// started, and the store bounds every read by a head it read before.

// Record returns the record with id.
func (b *Backend) Record(id uint64) (event.Record, bool, error) {
	if id > math.MaxInt64 {
		return event.Record{}, false, nil
	}
	ctx, cancel := b.live.timeout()
	defer cancel()
	var raw []byte
	err := b.q.QueryRow(ctx, "SELECT record FROM eventstore.events WHERE id = $1", int64(id)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return event.Record{}, false, nil
	}
	if err != nil {
		return event.Record{}, false, wrap(err, "read event %d", id)
	}
	return event.Record{ID: id, JSON: raw}, true, nil
}

// LatestID returns the highest id up to maxID of an event with exactly
// subject and, unless eventType is "", exactly eventType. Without a type
// it reads the subject's runs alone; with one, it reads the subject's
// events back from maxID (Scan) to the first of the type.
func (b *Backend) LatestID(subject, eventType string, maxID uint64) (uint64, bool, error) {
	if !storable(subject, eventType) {
		return 0, false, nil
	}
	if eventType != "" {
		it := b.Scan(store.Scan{Subject: subject, Type: eventType, To: maxID, Descending: true})
		found := it.Next()
		var id uint64
		if found {
			id = it.Record().ID
		}
		return id, found, it.Close()
	}
	ctx, cancel := b.live.timeout()
	defer cancel()
	var id int64
	err := b.q.QueryRow(ctx, latestRunSQL, int64(0), toInt64(maxID), 1, subject).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap(err, "look up the latest event of %s", subject)
	}
	return uint64(id), true, nil
}

// Scan iterates the records selected by s, page by page (recordPages): by
// the runs of a subject or a type (runsSQL), or along the log, filtered by
// subject, for every event, a subtree or a subject prefix (logSQL).
func (b *Backend) Scan(s store.Scan) store.RecordIterator {
	return b.scan("e.record", s)
}

// scan iterates the ids and column of the events s selects (scanSQL).
func (b *Backend) scan(column string, s store.Scan) store.RecordIterator {
	sql, args, err := scanSQL(column, s)
	if err != nil {
		return &recordPages{err: err, done: true}
	}
	if sql == "" || s.From > math.MaxInt64 {
		return &recordPages{done: true}
	}
	return newRecordPages(b.live, b.q, sql, args, s.From, s.To, s.Descending)
}

// scanSQL returns the statement of a page of s: e.id and column of the
// events of s with ids from $1 to $2, at most $3 rows, in the order of s,
// with its arguments from $4 on; "" when no event can match. A row whose
// column is NULL is an event read but not selected.
func scanSQL(column string, s store.Scan) (string, []any, error) {
	if !storable(s.Subject, s.Type, s.SubjectPrefix) {
		return "", nil, nil // PostgreSQL's text holds no such string
	}
	desc := s.Descending
	switch {
	case len(s.IDs) > 0:
		ids := make([]int64, 0, len(s.IDs))
		for _, id := range s.IDs {
			if id <= math.MaxInt64 {
				ids = append(ids, int64(id))
			}
		}
		return logSQL(column, "e.id = ANY($4)", desc), []any{ids}, nil
	case s.DataIndex != 0:
		keys := make([][]byte, len(s.DataKeys))
		froms, tos := make([]int64, len(s.DataKeys)), make([]int64, len(s.DataKeys))
		for i, l := range s.DataKeys {
			keys[i], froms[i], tos[i] = []byte(l.Key), toInt64(l.From), toInt64(l.To)
		}
		return dataSQL(column, desc), []any{int64(s.DataIndex), keys, froms, tos}, nil
	case s.SubjectPrefix != "" && s.SubjectPrefix != "/":
		if end, ok := prefixEnd(s.SubjectPrefix); ok {
			return logSQL(column, "e.subject >= $4 AND e.subject < $5", desc), []any{s.SubjectPrefix, end}, nil
		}
		return logSQL(column, "e.subject >= $4", desc), []any{s.SubjectPrefix}, nil
	case s.SubjectPrefix != "":
		return logSQL(column, "true", desc), nil, nil
	case s.Type != "" && s.Subject == "":
		return runsSQL(column, typeRuns, desc), []any{s.Type}, nil
	case s.Type != "" && !s.Recursive:
		// The subject's other events come as rows with a NULL column, which
		// the pages pass over: the page goes on after them.
		return runsSQL("CASE WHEN e.type = $5 THEN "+column+" END", subjectRuns, desc), []any{s.Subject, s.Type}, nil
	case s.Type != "":
		return "", nil, errors.New("a scan by type takes no recursive subject")
	case s.Subject == "" || (s.Subject == "/" && s.Recursive):
		return logSQL(column, "true", desc), nil, nil
	case !s.Recursive:
		return runsSQL(column, subjectRuns, desc), []any{s.Subject}, nil
	}
	// The descendants of s lie in [s/, s0): '0' follows '/' in byte order.
	return logSQL(column, "(e.subject = $4 OR (e.subject >= $5 AND e.subject < $6))", desc), []any{s.Subject, s.Subject + "/", s.Subject + "0"}, nil
}

// storable reports whether PostgreSQL's text can hold every string: valid
// UTF-8 without NUL. No stored subject or type equals one that is not.
func storable(strs ...string) bool {
	for _, s := range strs {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return false
		}
	}
	return true
}

// prefixEnd returns the least string above every string that starts with
// prefix, in the byte order of UTF-8 (which is code point order), and false
// when there is none.
func prefixEnd(prefix string) (string, bool) {
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		if r := runes[i]; r < unicode.MaxRune {
			next := r + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are no characters
				next = 0xE000
			}
			return string(runes[:i]) + string(next), true
		}
	}
	return "", false
}

func toInt64(id uint64) int64 { return int64(min(id, math.MaxInt64)) }

// runs is a table of runs: for each sequence of consecutive ids whose
// events share the value of key (within a commit, or as the migration
// found them, see indexByRuns), the value with the first and the last id,
// keyed by (key, last_id).
type runs struct {
	table, key string
	value      func(store.Written) string // the key of an event
}

var (
	subjectRuns = runs{"eventstore.subject_runs", "subject", func(w store.Written) string { return w.Subject }}
	typeRuns    = runs{"eventstore.type_runs", "type", func(w store.Written) string { return w.Type }}
)

// within is the condition on the runs r of the value $4 that overlap the
// ids $1 to $2: those whose last id lies from $1 up to the first last id
// at or above $2 (the run holding $2 ends there, or the next one). Both
// ends bound the scan of the runs' key, whichever way a read goes.
func (r runs) within() string {
	return fmt.Sprintf("r.%[2]s = $4 AND r.last_id BETWEEN $1 AND coalesce((SELECT last_id FROM %[1]s WHERE %[2]s = $4 AND last_id >= $2 ORDER BY last_id LIMIT 1), $2)", r.table, r.key)
}

// runsSQL returns the statement of a page (scanSQL) that reads the events
// of the runs within $1 to $2. It takes the runs in order, at most $3 of
// them, and from each the events still wanted, so that it knows the page's
// ids before it reads an event, whatever the lengths of the runs. Then it
// reads them one of two ways, whichever plan PostgreSQL would pick:
//   - short runs (fewer than shortRun events on average) that make up at
//     least 1/denseSpan of the ids they span: a walk of the primary key
//     over the span, filtered by the runs' key, reading at most denseSpan
//     events per event of the page (an event at a time per run costs more
//     than that);
//   - else each run's events through a lateral scan of the primary key,
//     reading the page's events alone.
//
// Both read in the order of the primary key (with sorts disabled for the
// sessions, no other plan competes); only the page's own rows are then
// sorted.
func runsSQL(column string, r runs, descending bool) string {
	dir, span := "", "min(lo) AS lo, max(lo + least(hi - lo + 1, wanted) - 1) AS hi"
	if descending {
		dir, span = " DESC", "min(hi - least(hi - lo + 1, wanted) + 1) AS lo, max(hi) AS hi"
	}
	dense := fmt.Sprintf("page.n < %d * page.runs AND page.hi - page.lo < %d * page.n", shortRun, denseSpan)
	return fmt.Sprintf(`WITH runs AS MATERIALIZED (
	SELECT r.last_id, greatest(r.first_id, $1) AS lo, least(r.last_id, $2) AS hi,
		$3 - coalesce(sum(least(r.last_id, $2) - greatest(r.first_id, $1) + 1) OVER (ORDER BY r.last_id%[4]s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::bigint AS wanted
	FROM %[2]s r WHERE %[3]s AND r.first_id <= $2 ORDER BY r.last_id%[4]s LIMIT $3),
page AS (SELECT count(*) AS runs, sum(least(hi - lo + 1, wanted)) AS n, %[5]s FROM runs WHERE wanted > 0)
SELECT e.* FROM page CROSS JOIN LATERAL (
	SELECT e.id, %[1]s FROM eventstore.events e WHERE e.id BETWEEN page.lo AND page.hi AND e.%[6]s = $4 ORDER BY e.id%[4]s) e
WHERE %[7]s
UNION ALL
SELECT e.* FROM page, runs CROSS JOIN LATERAL (
	SELECT e.id, %[1]s FROM eventstore.events e WHERE e.id BETWEEN runs.lo AND runs.hi ORDER BY e.id%[4]s LIMIT runs.wanted) e
WHERE NOT (%[7]s) AND runs.wanted > 0
ORDER BY 1%[4]s`, column, r.table, r.within(), dir, span, r.key, dense)
}

// A page of runs walks the span of its ids when its runs are shorter than
// shortRun events on average and their events at least 1/denseSpan of the
// span (runsSQL): on short runs (alternating subjects, runs of one event)
// one range read of the span beats a lookup per run.
const (
	shortRun  = 4
	denseSpan = 8
)

// latestRunSQL selects the highest id up to $2 of the subject $4 from its
// runs alone ($1 is 0, $3 is 1).
var latestRunSQL = fmt.Sprintf("SELECT least(r.last_id, $2) FROM %s r WHERE %s AND r.first_id <= $2 ORDER BY r.last_id DESC LIMIT $3", subjectRuns.table, subjectRuns.within())

// dataSQL returns the statement of a page (scanSQL) that reads the events
// with any of the keys $5 in the data index $4, each within its ids $6 to
// $7: the first ids of each key in order, at most a page's, then those of
// the page once each.
func dataSQL(column string, descending bool) string {
	dir := ""
	if descending {
		dir = " DESC"
	}
	return fmt.Sprintf(`SELECT e.id, %[1]s FROM (
	SELECT DISTINCT x.event_id FROM unnest($5::bytea[], $6::bigint[], $7::bigint[]) AS q(key, lo, hi) CROSS JOIN LATERAL (
		SELECT k.event_id FROM eventstore.data_keys k
		WHERE k.index_id = $4 AND k.key = q.key AND k.event_id BETWEEN greatest($1, q.lo) AND least($2, q.hi)
		ORDER BY k.event_id%[2]s LIMIT $3) x
	ORDER BY x.event_id%[2]s LIMIT $3) k
JOIN eventstore.events e ON e.id = k.event_id ORDER BY e.id%[2]s`, column, dir)
}

// logSQL returns the statement of a page (scanSQL) that walks the log
// along its primary key and filters its events by filter.
func logSQL(column, filter string, descending bool) string {
	order := "e.id"
	if descending {
		order = "e.id DESC"
	}
	return fmt.Sprintf("SELECT e.id, %s FROM eventstore.events e WHERE e.id BETWEEN $1 AND $2 AND %s ORDER BY %s LIMIT $3", column, filter, order)
}

// dataPostingsPage is how many postings a page of DataPostings reads.
const dataPostingsPage = 10_000

// DataPostings calls fn for every posting of the data index id, a page at
// a time in (key, event) order.
func (b *Backend) DataPostings(id uint64, fn func(key dataindex.Key, eventID uint64) error) error {
	after, afterID := []byte{}, int64(-1)
	for {
		var page []store.Posting
		err := func() error {
			ctx, cancel := b.live.timeout()
			defer cancel()
			rows, err := b.q.Query(ctx, `SELECT key, event_id FROM eventstore.data_keys
WHERE index_id = $1 AND (key, event_id) > ($2, $3) ORDER BY key, event_id LIMIT $4`, int64(id), after, afterID, dataPostingsPage)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var key []byte
				var eventID int64
				if err := rows.Scan(&key, &eventID); err != nil {
					return err
				}
				page = append(page, store.Posting{Index: id, Key: dataindex.Key(key), ID: uint64(eventID)})
			}
			return rows.Err()
		}()
		if err != nil {
			return wrap(err, "read the keys of data index %d", id)
		}
		for _, p := range page {
			if err := fn(p.Key, p.ID); err != nil {
				return err
			}
		}
		if len(page) < dataPostingsPage {
			return nil
		}
		last := page[len(page)-1]
		after, afterID = []byte(last.Key), int64(last.ID)
	}
}
