// Package schema holds the JSON Schemas that event types may be bound to.
// It guarantees:
//
//   - Compile accepts a schema only if it meets the registration rules of
//     docs/api.md §4.9, checked in their order, and fails with an *InvalidError
//     in the API's words otherwise. Schemas are JSON Schema 2020-12 by
//     default, 2019-09 or draft-07 by $schema, compiled with
//     github.com/santhosh-tekuri/jsonschema/v6, and nothing is ever loaded
//     from outside the document.
//   - A Schema keeps its stored form (Raw) byte for byte as registered,
//     whitespace aside.
//   - A schema read back from storage (Stored) is compiled on its first
//     use, once, whoever uses it first, and decides exactly as it did when
//     Compile accepted it.
//   - Validate decides exactly as the library does: a fast path that walks
//     canonical data directly may only accept, and everything it does not
//     accept is decided and explained by the library. A violation is a
//     *ViolationError whose message follows the API's wording.
package schema
