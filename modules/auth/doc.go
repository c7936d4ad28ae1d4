// Package auth protects the API with the single bearer token: every path
// under /api/ except ping requires it, and the check happens before anything
// else (route lookup, method check, body, shutdown state). Tokens are
// compared in constant time as SHA-256 digests, never read from query
// strings or cookies, and never logged.
package auth
