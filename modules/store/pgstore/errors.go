package pgstore

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventstore-service/eventstore/modules/store"
)

// wrap gives err context and classifies it: an error that means the
// database cannot be reached or cannot take writes now (a broken or refused
// connection, a server shutting down or in recovery, a read-only standby, a
// timeout, too many connections, a serialization failure) wraps
// store.ErrUnavailable; an error the server reports about the data or the
// statements (a constraint violation, a missing table) does not.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf(format+": %w", append(args, err)...)
	if unavailable(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// unavailable reports whether err means that the database cannot serve now.
// Every error that is not an answer of the server about the request is one:
// the connection broke, timed out or was never made.
func unavailable(err error) bool {
	if errors.Is(err, store.ErrUnavailable) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		var corrupt *store.CorruptionError
		return !errors.As(err, &corrupt)
	}
	switch pgErr.Code {
	case "25006", // read_only_sql_transaction: a standby, or a primary being demoted
		"55P03", // lock_not_available
		"57014": // query_canceled: our timeout
		return true
	}
	switch pgErr.Code[:2] {
	case "08", // connection exception
		"40", // transaction rollback: serialization failure, deadlock
		"53", // insufficient resources: too many connections, disk full, out of memory
		"57": // operator intervention: shutdown, crash, cannot connect now
		return true
	}
	return false
}
