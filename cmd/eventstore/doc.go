// Command eventstore is the event-sourcing database: `eventstore run`
// serves it, `verify` checks a stopped store, `bench` measures a running
// one, `version` describes the binary. Flags are validated before anything
// starts (usage errors exit 2); the fx modules under modules/ do the rest.
package main
