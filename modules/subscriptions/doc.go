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
//   - A Token names one delivery: subscription and its incarnation,
//     partition, epoch, event id and attempt; it settles that delivery
//     and no other.
//
// A Manager keeps the subscriptions of a store durable as its feature
// state (durable.go): it creates, resets and deletes them, connects and
// disconnects consumers (spreading the partitions again), and, through one
// commit each, hands a consumer its deliveries (Poll: the due ones again,
// then new events read through the store's views) and settles deliveries,
// optionally together with a write of events (both or neither). Every
// change of a partition commits before it is visible; a failed commit
// leaves the partition as it was.
//
// Parked events may be replayed: delivered once more, ahead of new events,
// apart from the floor.
//
// One read of the log serves every consumer: a poll delivers the new
// events of the other consumers' partitions too, not sent yet (Unsent),
// their records held in the owners' read-ahead until their own polls send
// them. The lag is counted as the cursors move (lagCount) rather than by
// reading the backlog.
//
// On a shared backend (PostgreSQL mode, Share) every node keeps every
// subscription; each partition is delivered by the node whose lease holds
// it (cluster.go), the others settle into its inbox (shared.go), and every
// change is fenced against those of other nodes.
//
// Package eventapi serves it (docs/api.md §4.14) on both backends, with
// its metrics; backups carry the definitions and positions (FromBackup,
// AppendBackup).
package subscriptions
