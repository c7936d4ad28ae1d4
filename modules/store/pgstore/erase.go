package pgstore

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

var _ store.Eraser = (*Backend)(nil)

// KeptDataSum returns the digest kept for the erased event id.
func (b *Backend) KeptDataSum(id uint64) (event.DataSum, bool, error) {
	ctx, cancel := b.live.timeout()
	defer cancel()
	var sum event.DataSum
	var raw []byte
	err := b.q.QueryRow(ctx, "SELECT data_hash FROM eventstore.erased WHERE event_id = $1", int64(id)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return sum, false, nil
	}
	if err != nil {
		return sum, false, wrap(err, "read the kept digest of event %d", id)
	}
	if copy(sum[:], raw) != len(sum) || len(raw) != len(sum) {
		return sum, false, corrupt("the kept digest of event %d has %d bytes", id, len(raw))
	}
	return sum, true, nil
}

// queueErased queues the statements that keep the digests of b's erased
// events (restored, Written.Kept, or erased now, Erased), replace the
// records of those erased now, which leaves a purge to do (purge.go), and
// delete the postings of their data (Unposted).
func queueErased(batch *pgx.Batch, b store.Batch) {
	var ids []int64
	var sums [][]byte
	for _, w := range b.Records {
		if w.Kept != nil {
			ids, sums = append(ids, int64(w.Record.ID)), append(sums, w.Kept[:])
		}
	}
	if len(b.Erased) > 0 {
		erased, records := make([]int64, len(b.Erased)), make([][]byte, len(b.Erased))
		for i, e := range b.Erased {
			erased[i], records[i] = int64(e.Record.ID), e.Record.JSON
			ids, sums = append(ids, int64(e.Record.ID)), append(sums, e.DataSum[:])
		}
		batch.Queue(`UPDATE eventstore.events e SET record = u.record
FROM unnest($1::bigint[], $2::bytea[]) AS u(id, record) WHERE e.id = u.id`, erased, records)
		batch.Queue("INSERT INTO eventstore.meta VALUES ('" + purgeKey + "', 'pending') ON CONFLICT (key) DO NOTHING")
		queueLayoutChange(batch)
	}
	if len(ids) > 0 {
		batch.Queue(`INSERT INTO eventstore.erased (event_id, data_hash)
SELECT * FROM unnest($1::bigint[], $2::bytea[])`, ids, sums)
	}
	if n := len(b.Unposted); n > 0 {
		indexes, keys, events := make([]int64, n), make([][]byte, n), make([]int64, n)
		for i, p := range b.Unposted {
			indexes[i], keys[i], events[i] = int64(p.Index), []byte(p.Key), int64(p.ID)
		}
		batch.Queue(`DELETE FROM eventstore.data_keys d USING unnest($1::bigint[], $2::bytea[], $3::bigint[]) AS u(index_id, key, event_id)
WHERE d.index_id = u.index_id AND d.key = u.key AND d.event_id = u.event_id`, indexes, keys, events)
	}
}
