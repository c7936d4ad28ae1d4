// Package consumer is the Go client of eventstore's durable subscriptions
// (docs/api.md §4.14): plain net/http and encoding/json, importing nothing
// of the service, so that a consumer's program can vendor it alone.
//
// A Client manages subscriptions (Create, Get, List, Delete, Reset, Parked,
// Replay of the ids it names, ReplayAll), settles deliveries (Acknowledge,
// Retry, Park, and InProgress, which extends their deadlines; in requests
// of at most MaxTokens tokens) and writes events, optionally together with the
// acknowledgement of deliveries in one atomic request (WriteEvents with
// WriteOptions.Acknowledge). A status other than 200 becomes an *Error with
// the status and the service's plain-text message; errors.Is tells
// ErrNotHeld, ErrNotFound, ErrConsumerReplaced and ErrSubscriptionDeleted
// apart.
//
// For decisions across entities (docs/eventql.md §13.1) a Client runs
// EventQL queries (RunQuery), manages data indexes (RegisterDataIndex,
// DataIndexes, RemoveDataIndex) and decides: Decide reads the events of a
// boundary, calls the decision with them and writes its events on
// condition that no event of the boundary came after them, deciding again
// when one did (ErrPreconditionFailed).
//
// Client.Consume runs a consumer: it opens the consume stream, calls the
// Handler once per delivery and settles the delivery by what the handler
// returned (nil: acknowledge; Retry: retry after a delay; Park: park; any
// other error: retry after ConsumeOptions.RetryDelay of the attempt;
// ErrSettleLater: nothing, the application settles it later with its
// token). A handler that needs longer than the acknowledge timeout calls
// Delivery.InProgress meanwhile.
// Client.ConsumeReactions does the same with a ReactionHandler whose events
// are written together with the acknowledgement of their delivery: a
// reaction is in the store exactly once, whichever consumer made it.
//
// Guarantees and choices of Consume:
//   - At least once: a delivery that is not settled (the handler failed
//     while the stream ended, the partition moved, the process died) is
//     sent again by the service, to whichever consumer owns its partition.
//   - Order: the deliveries of one partition are handled one after the
//     other, in the order they arrive (id order, apart from the ones the
//     service sends again). By default the handler is never called
//     concurrently (ConsumeOptions.Concurrency 1); with Concurrency n, up to
//     n partitions are handled at once, still one delivery at a time each.
//   - Acknowledgements are batched: sent when AckBatchSize have gathered,
//     when a partition has no more deliveries waiting, every AckInterval,
//     and before Consume closes its stream. Retries, parks and reactions are
//     sent at once, before the partition's next delivery is handled.
//   - A delivery is held only while its partition is assigned to this
//     consumer and its stream is open: the results of deliveries whose
//     partition moved away, or whose stream ended, are dropped (the
//     service sends those deliveries again to the partition's owner) and
//     counted in Stats.Dropped; the handler's context ends with the hold.
//   - The stream is reopened after it ends or fails, with exponential
//     backoff and jitter between ReconnectMin and ReconnectMax, until the
//     context ends; a stream without any line (heartbeats come after each
//     idle second) for HeartbeatTimeout is taken for dead. The error lines
//     "consumer replaced" and "subscription deleted", and a refusal of the
//     stream with a 4xx status (an unknown subscription, a wrong token),
//     end Consume with that error.
//   - When the context ends, Consume stops handling new deliveries, waits
//     for the running handlers, settles what they finished (within
//     ShutdownTimeout) and only then closes the stream.
package consumer
