// Package dataindex holds the data indexes of docs/api.md §4.15 as plain
// Go: their definitions, and the keys that an event's data gives an index
// (keys.go). The store keeps the keys of every covered event beside its
// record, and EventQL's planner turns conjuncts into lookups of them; both
// compute keys here, so that a key means one thing everywhere.
package dataindex

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/names"
)

// Bounds of a definition.
const (
	// MaxDepth bounds the tokens of a path.
	MaxDepth = 16
	// MaxPathLength bounds a path's bytes.
	MaxPathLength = 1024
	// MaxEventTypes bounds the event types one index covers.
	MaxEventTypes = 100
)

// Errors of Validate, wrapped with the value they refuse.
var (
	ErrInvalidName      = errors.New("invalid name")
	ErrInvalidPath      = errors.New("invalid path")
	ErrInvalidEventType = errors.New("invalid event type")
	ErrInvalidTypes     = errors.New("invalid event types")
)

// Definition is a data index as registered: its name, the JSON pointer
// into an event's data whose value gives the keys, and the event types it
// covers (nil: every type).
type Definition struct {
	Name       string   `json:"name"`
	Path       string   `json:"path"`
	EventTypes []string `json:"eventTypes,omitempty"`
}

// Validate checks d as register-data-index does, and puts its event types
// in byte order without repeats.
func (d *Definition) Validate() error {
	if !names.Valid(d.Name) {
		return fmt.Errorf("%w '%s'", ErrInvalidName, d.Name)
	}
	if _, err := Tokens(d.Path); err != nil {
		return err
	}
	if d.EventTypes == nil {
		return nil
	}
	if len(d.EventTypes) == 0 || len(d.EventTypes) > MaxEventTypes {
		return fmt.Errorf("%w: eventTypes takes 1 to %d types when present", ErrInvalidTypes, MaxEventTypes)
	}
	for _, t := range d.EventTypes {
		if !event.ValidType(t) {
			return fmt.Errorf("%w: '%s'", ErrInvalidEventType, t)
		}
	}
	d.EventTypes = slices.Compact(slices.Sorted(slices.Values(d.EventTypes)))
	return nil
}

// Same reports whether d and o define the same index: a registration of o
// where d exists changes nothing. Both are validated.
func (d Definition) Same(o Definition) bool {
	return d.Name == o.Name && d.Path == o.Path && (d.EventTypes == nil) == (o.EventTypes == nil) &&
		slices.Equal(d.EventTypes, o.EventTypes)
}

// Covers reports whether d indexes the events of eventType. d is
// validated.
func (d Definition) Covers(eventType string) bool {
	if d.EventTypes == nil {
		return true
	}
	_, found := slices.BinarySearch(d.EventTypes, eventType)
	return found
}

// CoversAll reports whether d indexes the events of every type of types.
func (d Definition) CoversAll(types []string) bool {
	for _, t := range types {
		if !d.Covers(t) {
			return false
		}
	}
	return true
}

// Tokens returns the reference tokens of the JSON pointer path (RFC 6901):
// none for "", the whole data. It fails with ErrInvalidPath for a path
// that is not a JSON pointer, or is deeper than MaxDepth tokens or longer
// than MaxPathLength bytes.
func Tokens(path string) ([]string, error) {
	invalid := fmt.Errorf("%w '%s'", ErrInvalidPath, path)
	if path == "" {
		return nil, nil
	}
	if path[0] != '/' || len(path) > MaxPathLength {
		return nil, invalid
	}
	tokens := strings.Split(path[1:], "/")
	if len(tokens) > MaxDepth {
		return nil, invalid
	}
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, invalid
			}
		}
		if strings.Contains(t, "~") {
			tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
		}
	}
	return tokens, nil
}

// Path returns the JSON pointer of the member names fields, one below the
// other: the path an index must have to serve x.data.<fields[0]>.….
func Path(fields []string) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteByte('/')
		if strings.ContainsAny(f, "~/") {
			f = strings.NewReplacer("~", "~0", "/", "~1").Replace(f)
		}
		b.WriteString(f)
	}
	return b.String()
}
