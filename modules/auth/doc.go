// Package auth protects the API with bearer tokens: the single token of
// --api-token, the tokens of --api-token-file, or the named tokens of an
// access file with their grants (docs/api.md §1.2a). Every path under
// /api/ except ping requires a token, and the check happens before
// anything else (route lookup, method check, body, shutdown state); the
// route's permission comes next, then the subjects or subscription its
// body names (Allowed). Tokens are compared in constant time as SHA-256
// digests, never read from query strings or cookies, and never logged.
// The files are read again when they change (Watcher); the open streams of
// a token end when it expires, or when a reload removes it or takes a
// grant they were opened with (Watch).
package auth
