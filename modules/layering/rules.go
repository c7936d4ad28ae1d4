package layering

import (
	"path/filepath"
	"strings"
)

// modulePath is the import path of the repository's Go module.
const modulePath = "github.com/eventstore-service/eventstore/"

// A layer is a set of packages with the same place in the design. A
// package may import packages of its own layer and of the layers below it,
// never of a layer above.
type layer struct {
	name     string
	packages []string // directories relative to the repository root; "dir/..." takes the subtree
	why      string
}

// layers lists every package of the repository, lowest first. A new
// package fails the test until it is placed here.
var layers = []layer{
	{
		name:     "base",
		packages: []string{"modules/layering", "modules/throttle", "modules/names", "docs"},
		why:      "these rules, generic helpers (the rule of names) and the documents the service serves: they import nothing of the project",
	},
	{
		name:     "record",
		packages: []string{"modules/jsonscan", "modules/event", "modules/schema", "modules/dataindex"},
		why:      "the event record, its JSON, its schemas and the keys of its data: the vocabulary every other package shares",
	},
	{
		name:     "engine",
		packages: []string{"modules/store/...", "modules/eventql/...", "modules/backup", "modules/subscriptions"},
		why:      "the storage engine and the query language: plain Go that a test, a tool or another service can use without the HTTP service around it",
	},
	{
		name: "service",
		packages: []string{"modules/config", "modules/logging", "modules/lifecycle", "modules/datadir", "modules/envelope",
			"modules/httpkit", "modules/metrics", "modules/health", "modules/auth", "modules/tracing", "modules/download"},
		why: "what every part of the running service shares: configuration, logging, the lifecycle, the HTTP vocabulary, metrics, traces, health, the token check",
	},
	{
		name:     "features",
		packages: []string{"modules/storage", "modules/eventapi", "modules/opsapi", "modules/httpserver", "modules/ui", "modules/mcpapi", "modules/bench", "modules/consumer", "ui"},
		why:      "the parts a request passes through: the storage module, the endpoints, the server, the console, the MCP server, the load tool, the Go client of subscriptions",
	},
	{
		name:     "binary",
		packages: []string{"cmd/..."},
		why:      "the command line: it assembles the modules and nothing imports it",
	},
}

// forbidden are imports that some layers must never make directly, with
// the reason.
var forbidden = []struct {
	layers  []string
	imports []string
	why     string
}{
	{
		layers:  []string{"record", "engine"},
		imports: []string{"net/http", "go.uber.org/fx", "github.com/prometheus/client_golang", "github.com/urfave/cli"},
		why:     "the engine knows nothing of HTTP, wiring, metrics or flags; the service turns what it exposes into those",
	},
	{
		layers:  []string{"record", "engine"},
		imports: []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "go.opentelemetry.io/contrib"},
		why:     "the engine records spans through the OpenTelemetry API alone (a tracer it is given); the service chooses the SDK and the exporter",
	},
}

// fxOnlyIn is where go.uber.org/fx may be imported: each package keeps its
// wiring in module.go, and the binary assembles the modules.
func fxOnlyIn(dir, file string) bool {
	return filepath.Base(file) == "module.go" || strings.HasPrefix(dir, "cmd/")
}

// layerOf returns the index of the layer holding dir, or -1.
func layerOf(dir string) int {
	for i, l := range layers {
		for _, p := range l.packages {
			if dir == p || (strings.HasSuffix(p, "/...") && (dir == strings.TrimSuffix(p, "/...") || strings.HasPrefix(dir, strings.TrimSuffix(p, "...")))) {
				return i
			}
		}
	}
	return -1
}
