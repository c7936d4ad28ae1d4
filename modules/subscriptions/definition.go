package subscriptions

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/names"
)

// Bounds of a definition's options.
const (
	MaxEventTypes      = 100
	MaxPartitions      = 1024
	MaxMaxInFlight     = 10_000
	MinAckTimeout      = time.Second
	MaxAckTimeout      = time.Hour
	MaxMaxDeliveries   = 1000
	DefaultMaxInFlight = 100
	DefaultAckTimeout  = 30 * time.Second
	DefaultDeliveries  = 10
	// DefaultMaxSubscriptions is how many subscriptions may exist unless
	// the service says otherwise (--max-subscriptions).
	DefaultMaxSubscriptions = 1000
)

// StartKind says where a subscription starts.
type StartKind int

// Where a subscription starts.
const (
	// FromBeginning takes every matching event of the log.
	FromBeginning StartKind = iota
	// FromEnd takes the events after the head at creation.
	FromEnd
	// AfterEvent takes the events after Start.EventID.
	AfterEvent
)

// Start is where a subscription (or a reset) starts.
type Start struct {
	Kind    StartKind
	EventID uint64 // for AfterEvent
}

// Floor returns the first id the start takes, for a log of head events.
func (s Start) Floor(head uint64) uint64 {
	switch s.Kind {
	case FromEnd:
		return head
	case AfterEvent:
		return s.EventID + 1
	}
	return 0
}

// Options shape a subscription; Defaults gives those of an empty options
// object.
type Options struct {
	Recursive          bool
	EventTypes         []string // none: every type
	Start              Start
	Partitions         int
	MaxInFlight        int
	AcknowledgeTimeout time.Duration
	MaxDeliveries      int
}

// Defaults returns the options a subscription has when none are given.
func Defaults() Options {
	return Options{Partitions: 1, MaxInFlight: DefaultMaxInFlight, AcknowledgeTimeout: DefaultAckTimeout, MaxDeliveries: DefaultDeliveries}
}

// Definition is a subscription as created.
type Definition struct {
	Name    string
	Subject string
	Options Options
}

// Validate returns what is wrong with d, naming the option, or nil. The
// subject and the event types are checked by the caller, as for reads.
func (d Definition) Validate() error {
	o := d.Options
	switch {
	case !names.Valid(d.Name):
		return fmt.Errorf("invalid name '%s'", d.Name)
	case o.EventTypes != nil && (len(o.EventTypes) < 1 || len(o.EventTypes) > MaxEventTypes):
		return fmt.Errorf("eventTypes takes 1 to %d types", MaxEventTypes)
	case o.Partitions < 1 || o.Partitions > MaxPartitions:
		return fmt.Errorf("partitions must be 1 to %d", MaxPartitions)
	case o.MaxInFlight < 1 || o.MaxInFlight > MaxMaxInFlight:
		return fmt.Errorf("maxInFlight must be 1 to %d", MaxMaxInFlight)
	case o.AcknowledgeTimeout < MinAckTimeout || o.AcknowledgeTimeout > MaxAckTimeout:
		return fmt.Errorf("acknowledgeTimeout must be %v to %v", MinAckTimeout, MaxAckTimeout)
	case o.MaxDeliveries < 1 || o.MaxDeliveries > MaxMaxDeliveries:
		return fmt.Errorf("maxDeliveries must be 1 to %d", MaxMaxDeliveries)
	}
	return nil
}

// Same reports whether d and o define the same subscription (the event
// types in any order): creating it again changes nothing.
func (d Definition) Same(o Definition) bool {
	x, y := d.Options, o.Options
	return d.Name == o.Name && d.Subject == o.Subject && x.Recursive == y.Recursive && x.Start == y.Start &&
		x.Partitions == y.Partitions && x.MaxInFlight == y.MaxInFlight && x.AcknowledgeTimeout == y.AcknowledgeTimeout &&
		x.MaxDeliveries == y.MaxDeliveries && (x.EventTypes == nil) == (y.EventTypes == nil) &&
		slices.Equal(slices.Sorted(slices.Values(x.EventTypes)), slices.Sorted(slices.Values(y.EventTypes)))
}

// Matches reports whether an event of subject and eventType belongs to the
// subscription.
func (d Definition) Matches(subject, eventType string) bool {
	if subject != d.Subject && !(d.Options.Recursive && within(subject, d.Subject)) {
		return false
	}
	return d.Options.EventTypes == nil || slices.Contains(d.Options.EventTypes, eventType)
}

// within reports whether subject lies strictly below base.
func within(subject, base string) bool {
	if base == "/" {
		return subject != "/"
	}
	return strings.HasPrefix(subject, base) && len(subject) > len(base) && subject[len(base)] == '/'
}
