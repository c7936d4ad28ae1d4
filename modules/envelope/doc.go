// Package envelope builds the management events that ping,
// verify-api-token and register-event-schema answer with: CloudEvents-style
// objects of exactly eight keys in a fixed order, each with a fresh UUID.
package envelope
