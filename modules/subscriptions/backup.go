package subscriptions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// backupLine is the line of a subscription in a backup (api.md §4.14): its
// definition and its partitions' positions. Deliveries in flight, settles
// above the positions and parked events are not part of it.
type backupLine struct {
	Type    string        `json:"type"`
	Payload backupPayload `json:"payload"`
}

type backupPayload struct {
	Subscription string            `json:"subscription"`
	Subject      string            `json:"subject"`
	Options      json.RawMessage   `json:"options"`
	Partitions   []backupPartition `json:"partitions"`
}

type backupPartition struct {
	Partition int     `json:"partition"`
	Position  *string `json:"position"`
}

// AppendBackup appends the backup line of the subscription info describes,
// with its newline, for a backup of the first events events of the log. A
// partition whose position lies beyond them is set back to the last (or to
// none): restored, its events after the backup's are delivered again rather
// than skipped.
func AppendBackup(dst []byte, info Info, events uint64) []byte {
	d := info.Definition
	options, _ := json.Marshal(d.Options.Wire())
	line := backupLine{Type: "subscription", Payload: backupPayload{Subscription: d.Name, Subject: d.Subject, Options: options}}
	for _, p := range info.Partitions {
		bp := backupPartition{Partition: p.Partition}
		if p.HasPosition && events > 0 {
			pos := strconv.FormatUint(min(p.Position, events-1), 10)
			bp.Position = &pos
		}
		line.Payload.Partitions = append(line.Payload.Partitions, bp)
	}
	raw, err := json.Marshal(line)
	if err != nil {
		panic(err) // plain structs and valid JSON
	}
	return append(append(dst, raw...), '\n')
}

// FromBackup reads the payload of a subscription line of a backup of
// events events and returns the feature state that restores the
// subscription (without versions): its definition, created at now,
// and its partitions at their positions with nothing in flight, so that
// its consumers go on after the positions. A payload that is not one, or
// whose positions lie beyond the backup's events, is an error.
func FromBackup(payload []byte, events uint64, now time.Time) ([]store.StateRecord, error) {
	var p backupPayload
	if err := strictJSON(payload, &p); err != nil {
		return nil, fmt.Errorf("malformed subscription line: %w", err)
	}
	var w WireOptions
	if len(p.Options) > 0 {
		if err := strictJSON(p.Options, &w); err != nil {
			return nil, fmt.Errorf("subscription %s: malformed options: %w", event.Quote(p.Subscription), err)
		}
	}
	d, err := ParseDefinition(p.Subscription, p.Subject, w)
	if err != nil {
		return nil, fmt.Errorf("subscription %s: %w", event.Quote(p.Subscription), err)
	}
	n := d.Options.Partitions
	if len(p.Partitions) != n {
		return nil, fmt.Errorf("subscription %s: %d partitions listed, %d defined", event.Quote(d.Name), len(p.Partitions), n)
	}
	records := []store.StateRecord{{Space: spaceDefinitions, Key: d.Name, Value: encodeDefinition(d, now.UTC())}}
	floors := make([]*uint64, n)
	for _, bp := range p.Partitions {
		if bp.Partition < 0 || bp.Partition >= n || floors[bp.Partition] != nil {
			return nil, fmt.Errorf("subscription %s: partition %d listed twice or not defined", event.Quote(d.Name), bp.Partition)
		}
		floor := uint64(0)
		if bp.Position != nil {
			id, ok := event.ParseID(*bp.Position)
			switch {
			case !ok:
				return nil, fmt.Errorf("subscription %s: partition %d: invalid position %s", event.Quote(d.Name), bp.Partition, event.Quote(*bp.Position))
			case id >= events:
				return nil, fmt.Errorf("subscription %s: partition %d at event %d, beyond the backup's events", event.Quote(d.Name), bp.Partition, id)
			}
			floor = id + 1
		}
		floors[bp.Partition] = &floor
	}
	for i, floor := range floors {
		records = append(records, store.StateRecord{Space: spacePartitions, Key: partitionKey(d.Name, i),
			Value: mustJSON(partitionRecord{Floor: *floor})})
	}
	return records, nil
}

// strictJSON decodes raw into v, refusing unknown members and trailing
// data.
func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}
