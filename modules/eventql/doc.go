// Package eventql is the EventQL query language of docs/eventql.md: lexer,
// parser, static checker, planner and a streaming executor over a
// Database snapshot. It guarantees:
//
//   - Compile turns any text into a Program or a static *Error in the
//     wording of §16.1, and never crashes or hangs: within MaxNesting and
//     MaxTokens every stage runs in a bounded stack and memory, beyond
//     them the query is a static error.
//   - Run streams the rows of a program in order from one Database
//     snapshot, with the memory of its blocking steps charged against
//     Options.MemoryLimit and its time bounded by the context and
//     Options.TimeLimit; a failure is a runtime *Error (§16.2). NOW() is
//     the same throughout one run.
//   - Holds evaluates a program as an isEventQlQueryTrue precondition
//     (§13).
//   - Index conjuncts (§14) become the Selection a source hands to
//     Database.Events, so that a database with indexes reads only what a
//     query needs.
//
// It knows nothing of HTTP or of the storage engine: the store provides a
// Database (package storedb), the API turns rows into NDJSON.
package eventql
