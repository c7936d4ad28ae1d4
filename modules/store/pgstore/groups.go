package pgstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/eventstore-service/eventstore/modules/store"
)

// groupColumn is the column of a scan (scanSQL) of Groups: the subject
// and type, as a JSON array, instead of the record.
const groupColumn = "convert_to(json_build_array(e.subject, e.type)::text, 'UTF8')"

// Groups reads the subject and type of each event s selects, page by page
// in id order, and calls fn for each run of events of one subject and
// type. It reads no record.
func (b *Backend) Groups(s store.Scan, fn store.GroupFunc) error {
	if s.Type != "" || s.SubjectPrefix != "" || len(s.IDs) > 0 || s.Descending {
		return fmt.Errorf("groups select by subject and ids alone")
	}
	it := b.scan(groupColumn, s)
	var (
		ids           []uint64
		names, latest [2]string
	)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		err := fn(latest[0], latest[1], ids)
		ids = ids[:0]
		return err
	}
	for it.Next() {
		rec := it.Record()
		if err := json.Unmarshal(rec.JSON, &names); err != nil {
			return errors.Join(wrap(err, "read the subject and type of event %d", rec.ID), it.Close())
		}
		if names != latest || len(ids) == 4096 {
			if err := flush(); err != nil {
				return errors.Join(err, it.Close())
			}
			latest = names
		}
		ids = append(ids, rec.ID)
	}
	if err := it.Close(); err != nil {
		return err
	}
	return flush()
}
