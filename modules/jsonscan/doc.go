// Package jsonscan reads JSON in one pass without reflection. It
// guarantees:
//
//   - A Scanner walks objects, arrays and strings of a byte slice, skips
//     values and hands out raw values, without copying what it need not
//     decode. Malformed input is a *SyntaxError with its offset, a value
//     of the wrong type a *TypeError; Skip, Raw and the canonical writers
//     refuse nesting deeper than 1,000 levels rather than follow it.
//   - Canonicalize, Canonical and CanonicalValue write a value in the
//     canonical form of docs/api.md §2.3: compact, keys sorted by byte order
//     (the last of duplicate keys wins), numbers and strings written as Go's
//     encoding/json writes them (fuzz tests hold the output equal to an
//     encoding/json reference). AppendString and AppendFloat write one
//     string or number that way.
//
// It is generic: it knows no document of the service, so the layout of a
// stored event belongs to package event. The hot paths of the API decode
// requests with it.
package jsonscan
