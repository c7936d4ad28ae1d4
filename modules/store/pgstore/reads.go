package pgstore

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

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
	ctx, cancel := timeout()
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
// subject and, unless eventType is "", exactly eventType.
func (b *Backend) LatestID(subject, eventType string, maxID uint64) (uint64, bool, error) {
	if !storable(subject, eventType) {
		return 0, false, nil
	}
	ctx, cancel := timeout()
	defer cancel()
	var row pgx.Row
	if eventType == "" {
		row = b.q.QueryRow(ctx, "SELECT id FROM eventstore.events WHERE subject = $1 AND id <= $2 ORDER BY id DESC LIMIT 1", subject, toInt64(maxID))
	} else {
		row = b.q.QueryRow(ctx, "SELECT id FROM eventstore.events WHERE subject = $1 AND type = $2 AND id <= $3 ORDER BY id DESC LIMIT 1", subject, eventType, toInt64(maxID))
	}
	var id int64
	err := row.Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap(err, "look up the latest event of %s", subject)
	}
	return uint64(id), true, nil
}

// Schemas returns every registered schema in registration order.
func (b *Backend) Schemas() ([]store.SchemaWritten, error) {
	ctx, cancel := timeout()
	defer cancel()
	rows, err := b.q.Query(ctx, "SELECT event_type, raw FROM eventstore.schemas ORDER BY position")
	if err != nil {
		return nil, wrap(err, "read schemas")
	}
	var out []store.SchemaWritten
	for rows.Next() {
		var sw store.SchemaWritten
		if err := rows.Scan(&sw.Type, &sw.Raw); err != nil {
			rows.Close()
			return nil, wrap(err, "read schemas")
		}
		out = append(out, sw)
	}
	return out, wrap(rows.Err(), "read schemas")
}

// Scan iterates the records selected by s, page by page (recordPages): an
// index range of (subject, id), (type, id) or (subject, type, id), the
// subject range of a subtree or prefix, or the primary key for every event.
func (b *Backend) Scan(s store.Scan) store.RecordIterator {
	filter, args, err := scanFilter(s)
	if err != nil {
		return &recordPages{err: err, done: true}
	}
	if filter == "false" || s.From > math.MaxInt64 {
		return &recordPages{done: true}
	}
	return newRecordPages(b.q, "record", filter, args, s.From, s.To, s.Descending)
}

// scanFilter returns the condition on subject and type that selects the
// events of s, with its arguments from $4 on; "false" selects nothing.
func scanFilter(s store.Scan) (string, []any, error) {
	if !storable(s.Subject, s.Type, s.SubjectPrefix) {
		return "false", nil, nil // PostgreSQL's text holds no such string
	}
	switch {
	case s.SubjectPrefix != "" && s.SubjectPrefix != "/":
		if end, ok := prefixEnd(s.SubjectPrefix); ok {
			return "subject >= $4 AND subject < $5", []any{s.SubjectPrefix, end}, nil
		}
		return "subject >= $4", []any{s.SubjectPrefix}, nil
	case s.SubjectPrefix != "":
		return "true", nil, nil
	case s.Type != "" && s.Subject == "":
		return "type = $4", []any{s.Type}, nil
	case s.Type != "" && !s.Recursive:
		return "subject = $4 AND type = $5", []any{s.Subject, s.Type}, nil
	case s.Type != "":
		return "", nil, errors.New("a scan by type takes no recursive subject")
	case s.Subject == "" || (s.Subject == "/" && s.Recursive):
		return "true", nil, nil
	case !s.Recursive:
		return "subject = $4", []any{s.Subject}, nil
	}
	// The descendants of s lie in [s/, s0): '0' follows '/' in byte order.
	return "(subject = $4 OR (subject >= $5 AND subject < $6))", []any{s.Subject, s.Subject + "/", s.Subject + "0"}, nil
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

// recordPageSQL returns the statement of one page: column (the record, or
// what the verifier reads) of the events with ids from $1 to $2 that match
// filter, at most $3 of them, in id order.
func recordPageSQL(column, filter string, descending bool) string {
	order := "id"
	if descending {
		order = "id DESC"
	}
	return fmt.Sprintf("SELECT id, %s FROM eventstore.events WHERE id BETWEEN $1 AND $2 AND %s ORDER BY %s LIMIT $3", column, filter, order)
}
