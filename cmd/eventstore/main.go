package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/envelope"
	"github.com/eventstore-service/eventstore/modules/eventapi"
	"github.com/eventstore-service/eventstore/modules/health"
	"github.com/eventstore-service/eventstore/modules/httpserver"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/logging"
	"github.com/eventstore-service/eventstore/modules/mcpapi"
	"github.com/eventstore-service/eventstore/modules/metrics"
	"github.com/eventstore-service/eventstore/modules/opsapi"
	"github.com/eventstore-service/eventstore/modules/storage"
	"github.com/eventstore-service/eventstore/modules/tracing"
	"github.com/eventstore-service/eventstore/modules/ui"
)

// Set at build time with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = ""
)

// exitUsage is the exit code of usage errors.
const exitUsage = 2

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	err := newApp(stdout, stderr).Run(args)
	var exit cli.ExitCoder
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if msg := exit.Error(); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
		return exit.ExitCode()
	default:
		fmt.Fprintln(stderr, usageError(err).Error())
		return exitUsage
	}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	onUsageError := func(_ *cli.Context, err error, _ bool) error { return usageError(err) }
	return &cli.App{
		Name:           "eventstore",
		Usage:          "an event-sourcing database reached over HTTP",
		HideVersion:    true,
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {}, // run reports errors
		OnUsageError:   onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError(fmt.Errorf("unknown command %q (see --help)", c.Args().First()))
			}
			return usageError(errors.New("a command is required: run, verify, backup, restore, erase, bench, diagnostics, subscriptions or version (see --help)"))
		},
		Commands: []*cli.Command{
			{
				Name:         "run",
				Usage:        "serve the event store",
				Flags:        config.Flags(),
				OnUsageError: onUsageError,
				Action:       runService,
			},
			verifyCommand(),
			benchCommand(),
			diagnosticsCommand(),
			backupCommand(),
			restoreCommand(),
			eraseCommand(),
			subscriptionsCommand(),
			{
				Name:  "version",
				Usage: "print version, revision and Go version",
				Action: func(c *cli.Context) error {
					b := buildInfo()
					fmt.Fprintf(c.App.Writer, "eventstore %s (revision %s, %s)\n", b.Version, b.Revision, b.GoVersion)
					return nil
				},
			},
		},
	}
}

// runService is `eventstore run`: validate the flags, then run the modules
// until a signal stops them.
func runService(c *cli.Context) error {
	// Catch signals from the very start: one arriving during start-up is
	// handled as soon as the start is complete.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)

	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: run takes no arguments (booleans are set as --flag=false)", c.Args().First()))
	}
	cfg, err := config.Load(c)
	if err != nil {
		return usageError(err)
	}
	if _, err := auth.LoadTokens(cfg, zap.NewNop()); err != nil { // an invalid access file is a usage error
		return usageError(err)
	}
	traces, err := tracing.ReadSettings(cfg.OTelEnabled, os.Getenv)
	if err != nil {
		return usageError(err)
	}
	log := logging.New(cfg.LogLevel)
	defer func() { _ = log.Sync() }()
	tuneRuntime(cfg)

	var runner *lifecycle.Runner
	app := fx.New(append(serviceModules(cfg, traces, log), fx.Populate(&runner))...)
	if err := app.Err(); err != nil {
		log.Error("startup failed", zap.Error(err))
		return cli.Exit("", lifecycle.ExitFailure)
	}
	if code := runner.Run(app, signals); code != lifecycle.ExitOK {
		return cli.Exit("", code)
	}
	return nil
}

// serviceModules are the modules of `eventstore run`, in no particular
// order: what has to start before another part is a dependency of it (the
// lifecycle's hooks, which enter Running and begin the drain, depend on
// every component with hooks of its own).
func serviceModules(cfg config.Config, traces tracing.Settings, log *zap.Logger) []fx.Option {
	return []fx.Option{
		config.Module(cfg, buildInfo()),
		logging.Module(log),
		metrics.Module,
		tracing.Module(traces),
		envelope.Module,
		storage.Module(cfg), // with the data directory on Pebble
		eventapi.Module,
		opsapi.Module,
		auth.Module,
		health.Module,
		ui.Module,
		mcpapi.Module,
		httpserver.Module,
		lifecycle.Module,
	}
}

// defaultGCPercent is the garbage collector's target unless GOGC is set.
// The service's own live heap is small and its allocation rate high, so
// collecting at 5× the live heap instead of 2× spends a good deal less of a
// write's CPU on collection (docs/performance.md, "Built without cgo", has
// the measurement). Built without cgo, Pebble allocates its
// memtables (two or three of 64 MiB without a memory limit) in the Go heap,
// where they count as live heap themselves: 400% would let the heap grow to
// five times them, so there it is Go's default of 100.
func defaultGCPercent() int {
	if pebbleInGoHeap() {
		return 100
	}
	return 400
}

// pebbleInGoHeap reports whether Pebble's memtables are in the Go heap:
// Pebble allocates them with C's malloc when built with cgo.
func pebbleInGoHeap() bool { return buildSetting("CGO_ENABLED") != "1" }

// tuneRuntime sets the garbage collector's target unless GOGC is set, and
// the Go soft memory limit from --memory-limit (or the cgroup) unless
// GOMEMLIMIT is set: the process's limit less what Pebble allocates outside
// the Go heap.
func tuneRuntime(cfg config.Config) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent())
	}
	if cfg.MemoryLimit > 0 && cfg.MemorySource != config.MemoryFromGOMEMLIMIT {
		limit := cfg.MemoryLimit
		if !pebbleInGoHeap() {
			limit -= storage.PebbleOffHeap(cfg.MemoryLimit)
		}
		debug.SetMemoryLimit(limit)
	}
}

// buildSetting returns a setting the binary was built with, or "".
func buildSetting(key string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == key {
				return s.Value
			}
		}
	}
	return ""
}

func buildInfo() config.Build {
	b := config.Build{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if b.Revision == "" {
		b.Revision = cmp.Or(buildSetting("vcs.revision"), "unknown")
		if buildSetting("vcs.modified") == "true" {
			b.Revision += "-modified"
		}
	}
	return b
}

// flagErrors rewrites the flag package's messages into the --flag spelling.
var flagErrors = []struct {
	pattern *regexp.Regexp
	replace string
}{
	{regexp.MustCompile(`^flag provided but not defined: -+(.*)$`), "unknown flag --$1 (see --help)"},
	{regexp.MustCompile(`^flag needs an argument: -+(.*)$`), "--$1 needs a value"},
	{regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]*): .*$`), "invalid value \"$1\" for --$2"},
	{regexp.MustCompile(`^invalid boolean value "(.*)" for -+([^:]*): .*$`), "invalid value \"$1\" for --$2 (use true or false)"},
	{regexp.MustCompile(`^could not parse "(.*)" as (\w+) value from environment variable "([^"]*)" for flag ([^:]*): .*$`), "invalid $2 value \"$1\" in $3 (for --$4)"},
}

// usageError turns err into a one-line message on stderr and exit code 2.
func usageError(err error) error {
	msg := err.Error()
	for _, f := range flagErrors {
		if f.pattern.MatchString(msg) {
			msg = f.pattern.ReplaceAllString(msg, f.replace)
			break
		}
	}
	return cli.Exit("eventstore: "+msg, exitUsage)
}
