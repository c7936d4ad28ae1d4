// Package config turns the flags of `eventstore run` into a validated, typed
// Config. Every check that can fail on operator input happens here, before
// anything starts: a Config returned by Load is complete and consistent, with
// its token, TLS certificate and signing key already read from their files.
package config
