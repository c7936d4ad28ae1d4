// Package storedb runs EventQL on the store. It guarantees:
//
//   - A DB presents one store.View as an eventql.Database: a query reads
//     one consistent snapshot, the events of a Selection come in id order
//     (or reverse) with a union of index scans merged without duplicates,
//     and the context is checked every 256 records.
//   - A Condition is an EventQL program as a store precondition,
//     evaluated on the view the writer hands it.
package storedb
