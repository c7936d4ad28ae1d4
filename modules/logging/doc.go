// Package logging builds the service's zap logger: JSON objects on standard
// output, one per line, with the keys time (RFC 3339 UTC, nine fractional
// digits), level (DEBUG, INFO, WARN, ERROR, FATAL), message, the optional
// logger and caller, a stacktrace at ERROR and FATAL only, then the entry's
// lowerCamelCase fields.
package logging
