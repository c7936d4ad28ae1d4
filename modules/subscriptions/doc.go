// Package subscriptions holds the state machine of durable, server-side
// subscriptions: plain Go
// that knows nothing of HTTP or of how its state is stored.
//
//   - A Definition names the events of a subscription (a subject, its
//     subtree, some event types) and how they are delivered (partitions,
//     the window, the acknowledge timeout, the deliveries before parking).
//   - PartitionOf puts every event of a subject into one partition (FNV-1a
//     64 of the subject, modulo the partitions); Assign spreads the
//     partitions over the connected consumers evenly, moving as few as it
//     can.
//   - A Partition delivers its events in id order to one owner at a time,
//     at most MaxInFlight unsettled at once; settles may come out of order
//     and its position (Floor) advances over the settled prefix; a delivery
//     not settled in time is sent again, and parked after MaxDeliveries
//     attempts; every move and reset raises the epoch, which fences the
//     tokens of the deliveries made before it.
//   - A Token names one delivery: subscription, partition, epoch, event id
//     and attempt.
//
// Status: the state machine and its tests; the routes, the dispatcher
// that reads the log for it and the durable state through the store's
// feature state come next.
package subscriptions
