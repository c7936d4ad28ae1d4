// Package event holds the event record of the store and its rules, the
// shared vocabulary of the storage engine, the HTTP API and EventQL. It
// guarantees:
//
//   - Validation: ValidSubject, ValidType, ValidSource and ValidTraceParent
//     accept exactly the values docs/api.md §3 allows (a fuzz test holds them
//     equal to the expressions given there); ParseID accepts exactly the ids
//     requests may carry.
//   - The record: Seal writes the stored form of an event, its members in
//     the order of docs/api.md §2.1 that Member lists, with the hash of docs/api.md §2.5
//     computed from them. This package alone knows that layout: Record.Split finds the
//     members of any record Seal wrote in one pass without scanning data,
//     Decode returns its fields, and Fields.Verify detects any change to
//     what the hash covers (all but traceparent and tracestate). A Checker
//     does both for record after record without allocating (integrity
//     checks of whole stores).
//   - Time: NextTime gives each event a time strictly after the one before,
//     written by FormatTime in UTC with exactly nine fractional digits, so
//     that string order is time order.
//   - Output: an Emitter appends the complete JSON of a record as the read
//     APIs emit it, with its Ed25519 signature of the hash (or null), and
//     Verify checks such a signature.
//
// It knows nothing of storage, HTTP or queries.
package event
