// Package eventqltest holds what tests of EventQL share. It guarantees:
//
//   - Load returns the conformance cases of docs/eventql.md §17, from
//     eventql-cases.json, which lives in and is embedded in the package,
//     and SameRows compares rows by that file's comparison rules.
//   - A MemDB is an eventql.Database over events held in memory, sealed
//     as the store seals them (ids from 0, the hash chain) at fixed times,
//     with subjects and event types in the order of the read APIs, so that
//     queries run without a store.
package eventqltest
