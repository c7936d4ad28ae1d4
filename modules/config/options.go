package config

import (
	"github.com/urfave/cli/v2"
)

// Redacted stands in for a secret among the effective options.
const Redacted = "<redacted>"

// secretFlags are the flags whose values are never shown.
var secretFlags = map[string]bool{FlagAPIToken: true, "postgres-url": true}

// effectiveOptions returns the value every flag of `eventstore run` has,
// given or by default, keyed by flag name, with secrets redacted.
func effectiveOptions(src Source) map[string]any {
	out := map[string]any{}
	for _, f := range Flags() {
		name := f.Names()[0]
		var value any
		switch f.(type) {
		case *cli.BoolFlag:
			value = src.Bool(name)
		case *cli.IntFlag:
			value = src.Int(name)
		case *cli.DurationFlag:
			value = src.Duration(name).String()
		default:
			value = src.String(name)
		}
		if secretFlags[name] && value != "" {
			value = Redacted
		}
		out[name] = value
	}
	return out
}
