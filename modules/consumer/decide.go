package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// RunQuery runs the EventQL query (docs/eventql.md) and calls fn with the
// JSON of each row, in order, until the answer ends or fn fails.
func (c *Client) RunQuery(ctx context.Context, query string, fn func(row json.RawMessage) error) error {
	return c.stream(ctx, "run-eventql-query", map[string]string{"query": query}, "row", fn)
}

// DataIndex defines a data index (docs/api.md §4.15): the value at Path, a
// JSON pointer into the data of each event of EventTypes (every type when
// empty), gives the keys by which queries and preconditions on it read
// only the matching events.
type DataIndex struct {
	Name       string   `json:"name"`
	Path       string   `json:"path"`
	EventTypes []string `json:"eventTypes,omitempty"`
}

// DataIndexInfo is a registered data index as the service reports it.
type DataIndexInfo struct {
	DataIndex
	// State is "building" while the index is built from the log, then
	// "ready": only a ready index serves reads.
	State string `json:"state"`
	// IndexedEvents of the store's Events are indexed.
	IndexedEvents uint64    `json:"indexedEvents"`
	Events        uint64    `json:"events"`
	CreatedAt     time.Time `json:"createdAt"`
}

// RegisterDataIndex registers d, or returns the index of its name if it
// has the same definition (another one is a 409 *Error).
func (c *Client) RegisterDataIndex(ctx context.Context, d DataIndex) (DataIndexInfo, error) {
	var info DataIndexInfo
	_, err := c.call(ctx, "register-data-index", d, &info)
	return info, err
}

// DataIndexes returns the registered data indexes, by name.
func (c *Client) DataIndexes(ctx context.Context) ([]DataIndexInfo, error) {
	var out []DataIndexInfo
	err := c.stream(ctx, "read-data-indexes", struct{}{}, "dataIndex", func(payload json.RawMessage) error {
		var info DataIndexInfo
		if err := json.Unmarshal(payload, &info); err != nil {
			return err
		}
		out = append(out, info)
		return nil
	})
	return out, err
}

// RemoveDataIndex removes the data index name and its keys.
func (c *Client) RemoveDataIndex(ctx context.Context, name string) error {
	_, err := c.call(ctx, "remove-data-index", map[string]string{"name": name}, nil)
	return err
}

// Decide makes a decision across entities by the dynamic-consistency-
// boundary pattern (docs/eventql.md §13.1). The boundary is the events
// that where (an EventQL condition on e, e.g. `e.type ==
// "io.example.enrolled" AND e.data.tags CONTAINS "course:c1"`) selects.
// Decide reads them in id order (a read that fails on the way, e.g. 503
// too many queries, is sent again after a backoff between readRetryMin and
// readRetryMax) and calls decide with them; decide returns
// the events its decision writes (none: nothing is written) or an error,
// which Decide returns as it is. The events are written on condition that
// no event of the boundary came after the last one read; when one did (a
// concurrent decision on the same boundary came first), Decide reads the
// boundary again and decides again, until the write happens, decide fails
// or ctx ends. It returns the events as stored.
//
// With a data index on the member that names the boundary, the read and
// the condition cost what the boundary holds, not what the store holds.
func (c *Client) Decide(ctx context.Context, where string, decide func(boundary []Event) ([]EventCandidate, error)) ([]Event, error) {
	for {
		boundary, last, err := c.readBoundary(ctx, where)
		if err != nil {
			return nil, fmt.Errorf("read the boundary: %w", err)
		}
		events, err := decide(boundary)
		if err != nil || len(events) == 0 {
			return nil, err
		}
		// "After position", as the DCB libraries write it.
		condition := fmt.Sprintf("FROM e IN events WHERE (%s) AND (e.id AS INT + 1) > %d PROJECT INTO COUNT() == 0", where, last+1)
		written, err := c.WriteEvents(ctx, events, WriteOptions{Preconditions: []Precondition{IsEventQLQueryTrue(condition)}})
		if !errors.Is(err, ErrPreconditionFailed) {
			return written, err
		}
	}
}

// How long Decide waits before it reads a boundary again after a failed
// read: doubled with each failure in a row.
const (
	readRetryMin = 20 * time.Millisecond
	readRetryMax = 2 * time.Second
)

// readBoundary returns the events where selects, in id order, and the id
// of the last (-1 for none); a read that fails on the way is sent again
// until ctx ends.
func (c *Client) readBoundary(ctx context.Context, where string) ([]Event, int64, error) {
	for failures := 0; ; failures++ {
		var (
			boundary []Event
			last     int64 = -1
		)
		err := c.RunQuery(ctx, "FROM e IN events WHERE "+where+" ORDER BY e.id AS INT PROJECT INTO e", func(row json.RawMessage) error {
			var e Event
			if err := json.Unmarshal(row, &e); err != nil {
				return fmt.Errorf("a row of the boundary is not an event: %w", err)
			}
			id, err := strconv.ParseInt(e.ID, 10, 64)
			if err != nil {
				return fmt.Errorf("event id %q: %w", e.ID, err)
			}
			boundary, last = append(boundary, e), id
			return nil
		})
		if err == nil || !transient(err) || ctx.Err() != nil {
			return boundary, last, err
		}
		t := time.NewTimer(backoff(failures, readRetryMin, readRetryMax))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, 0, errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}
