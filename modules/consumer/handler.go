package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Delivery is one delivery of a consume stream: an event, sent to this
// consumer as its partition's owner.
type Delivery struct {
	// Token names the delivery when it is settled.
	Token string `json:"delivery"`
	// Attempt counts the deliveries of the event: 1 the first time.
	Attempt int `json:"attempt"`
	// Partition is the event's partition.
	Partition int   `json:"partition"`
	Event     Event `json:"event"`
	// extend extends the delivery (InProgress); nil outside Consume.
	extend func(ctx context.Context, by time.Duration) error
}

// InProgress tells the service, from a handler that needs longer than the
// subscription's acknowledge timeout, that it is still at work on d: d's
// deadline becomes now + by (1 s to 1 hour; 0: the acknowledge timeout),
// its attempt unchanged, so that it is not sent again meanwhile. It fails
// with ErrNotHeld when d is no longer held (its partition moved), and
// outside Consume.
func (d Delivery) InProgress(ctx context.Context, by time.Duration) error {
	if d.extend == nil {
		return errors.New("consumer: InProgress of a delivery that Consume did not hand over")
	}
	return d.extend(ctx, by)
}

// ErrSettleLater is the handler result that leaves its delivery unsettled
// when the handler returns: the application settles it later itself, with
// Client.Acknowledge, Retry, Park or InProgress and the delivery's Token,
// before its acknowledge deadline (else it is sent again). The partition's
// next delivery is handed over meanwhile; the subscription's maxInFlight
// bounds how many wait so.
var ErrSettleLater = errors.New("consumer: the application settles the delivery later")

// Handler handles one delivery. Its result settles the delivery: nil
// acknowledges it, an error made by Retry retries it after that error's
// delay, one made by Park parks the event, ErrSettleLater leaves it to the
// application, and any other error retries it after
// ConsumeOptions.RetryDelay of the attempt. The context ends when
// Consume's does, when the stream ends, or when the delivery's partition
// moves to another consumer: the delivery is then no longer held and the
// result is dropped.
type Handler func(ctx context.Context, d Delivery) error

// ReactionHandler handles one delivery as Handler does, and may answer it
// with events: they are written together with the acknowledgement of the
// delivery, in one atomic request, so that the reaction is stored exactly
// once even when deliveries are sent again. A reaction without events is a
// plain acknowledgement.
type ReactionHandler func(ctx context.Context, d Delivery) (Reaction, error)

// Reaction is what a ReactionHandler writes for a delivery.
type Reaction struct {
	// Events are written atomically with the delivery's acknowledgement.
	Events []EventCandidate
	// Preconditions must hold for the write; when one fails, the
	// reaction is refused and the delivery retried as after an error.
	Preconditions []Precondition
}

// RetryError is the result of a handler that asks for its delivery to be
// sent again after a delay; make one with Retry.
type RetryError struct {
	// After is the delay before the next attempt (0 to 1 hour).
	After time.Duration
	// Err is why, or nil.
	Err error
}

// Error describes the retry.
func (e *RetryError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.After)
	}
	return fmt.Sprintf("retry after %s: %v", e.After, e.Err)
}

// Unwrap returns the reason of the retry.
func (e *RetryError) Unwrap() error { return e.Err }

// Retry returns the handler result that sends the delivery again after
// the delay after (clamped to 0–1 hour), as its next attempt; err says
// why and may be nil. After the subscription's maxDeliveries attempts the
// event is parked.
func Retry(after time.Duration, err error) error { return &RetryError{After: after, Err: err} }

// ParkError is the result of a handler that gives up on an event; make one
// with Park.
type ParkError struct {
	// Reason is listed with the parked event.
	Reason string
}

// Error describes the park.
func (e *ParkError) Error() string { return "park: " + e.Reason }

// Park returns the handler result that parks the delivery's event with
// reason (cut to 1,024 bytes): it is settled without being acknowledged,
// listed by Client.Parked, and may be replayed.
func Park(reason string) error { return &ParkError{Reason: reason} }

// Stats counts what Consume did. Pass a *Stats in ConsumeOptions and read
// its counters at any time.
type Stats struct {
	// Connects counts the consume streams opened.
	Connects atomic.Int64
	// Deliveries counts the deliveries received.
	Deliveries atomic.Int64
	// Acknowledged counts the deliveries the service acknowledged,
	// reactions included.
	Acknowledged atomic.Int64
	// Reactions counts the reactions written.
	Reactions atomic.Int64
	// Retried counts the deliveries the service retried.
	Retried atomic.Int64
	// Parked counts the deliveries the service parked.
	Parked atomic.Int64
	// Stale counts the settles the service found stale, and the reactions
	// it refused with ErrNotHeld: the delivery was handled elsewhere, or
	// already (a reaction whose answer was lost and that found its
	// delivery settled when sent again counts here too).
	Stale atomic.Int64
	// Dropped counts the deliveries, and the results of handlers, that
	// Consume dropped without settling them because they were no longer
	// held (their partition moved, the stream ended) or Consume's context
	// ended: the service sends them again to the partition's owner.
	Dropped atomic.Int64
	// SettledLater counts the deliveries whose handlers returned
	// ErrSettleLater, left for the application to settle.
	SettledLater atomic.Int64
	// Failed counts the settles and reactions that failed for good (each
	// reported to OnError): their deliveries come again after the
	// subscription's acknowledge timeout.
	Failed atomic.Int64
}

// ConsumeOptions tune Consume; the zero value takes every default.
type ConsumeOptions struct {
	// Concurrency is the number of partitions handled at once, each one
	// delivery after the other. Default 1: the handler is never called
	// concurrently.
	Concurrency int
	// AckBatchSize is the most acknowledgements sent in one request, and
	// the number that triggers a request (1 to MaxTokens; default 1,000).
	AckBatchSize int
	// AckInterval is the longest an acknowledgement waits to be sent
	// while its partition has deliveries waiting (default 100ms).
	AckInterval time.Duration
	// RetryDelay returns the delay of the retry after a plain handler
	// error in the given attempt. Default: 1s, doubled with each attempt,
	// at most 1 minute.
	RetryDelay func(attempt int) time.Duration
	// ReconnectMin and ReconnectMax bound the delay before the stream is
	// opened again: ReconnectMin after the first failure, doubled with
	// each failure in a row up to ReconnectMax, each delay a random one
	// between its half and itself (defaults 100ms and 10s). The delays
	// between the retries of a failed settle grow the same way.
	ReconnectMin, ReconnectMax time.Duration
	// HeartbeatTimeout is how long the stream may be silent before it is
	// taken for dead; the service sends a heartbeat after each idle
	// second (default 10s).
	HeartbeatTimeout time.Duration
	// RequestTimeout bounds each settle and reaction request (default
	// 30s).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the settles that follow the end of
	// Consume's context (default 10s).
	ShutdownTimeout time.Duration
	// OnError, if set, learns of every failure that Consume overcomes by
	// itself: a stream that ended or could not be opened, a handler's
	// plain error, a failed settle. It may be called concurrently.
	OnError func(error)
	// Stats, if set, counts what Consume does.
	Stats *Stats
}

// withDefaults returns o with its defaults filled in.
func (o ConsumeOptions) withDefaults() ConsumeOptions {
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	if o.AckBatchSize < 1 {
		o.AckBatchSize = 1000
	}
	o.AckBatchSize = min(o.AckBatchSize, MaxTokens)
	if o.AckInterval <= 0 {
		o.AckInterval = 100 * time.Millisecond
	}
	if o.RetryDelay == nil {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = 100 * time.Millisecond
	}
	if o.ReconnectMax <= 0 {
		o.ReconnectMax = 10 * time.Second
	}
	o.ReconnectMax = max(o.ReconnectMax, o.ReconnectMin)
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 10 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.Stats == nil {
		o.Stats = &Stats{}
	}
	return o
}

// DefaultRetryDelay is the default ConsumeOptions.RetryDelay: 1s in the
// first attempt, doubled with each attempt, at most 1 minute.
func DefaultRetryDelay(attempt int) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// report hands err to OnError.
func (o *ConsumeOptions) report(err error) {
	if o.OnError != nil {
		o.OnError(err)
	}
}
