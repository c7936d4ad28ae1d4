package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/bench"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "drive the HTTP API with load and print events/s and latency percentiles",
		Description: "Without --url, bench starts its own server (this binary, temporary data directory, free port)\n" +
			"and also reports the server's CPU time per event and its memory. The baseline scenario loads a\n" +
			"trivial handler of this binary in a process of its own, as the write scenario loads the server:\n" +
			"the machine's ceiling, to which the write scenarios are related.\n\n" +
			"PostgreSQL mode: --postgres-url URL --nodes N starts N nodes on that database (an empty one is best)\n" +
			"and sends each request to the next node in turn; the observe scenario then observes on the first\n" +
			"node and writes on the second. --url takes the comma-separated nodes of a running service alike.\n" +
			"bench summary REPORT.json... puts the reports of several runs side by side.",
		Flags:  benchFlags(),
		Action: runBench,
		Subcommands: []*cli.Command{
			{
				Name:      "compare",
				Usage:     "compare two reports of bench --json: new/old of events/s and p99 per scenario",
				ArgsUsage: "OLD.json NEW.json",
				Flags:     []cli.Flag{toleranceFlag()},
				Action:    compareReports,
			},
			{
				Name:      "summary",
				Usage:     "put reports of bench --json side by side: per setup (server kind and nodes), the median and the range of events/s and p99 per scenario",
				ArgsUsage: "REPORT.json...",
				Action:    summarizeReports,
			},
			{
				Name:   bench.OTLPSinkSubcommand,
				Usage:  "take OTLP trace exports over HTTP and throw them away (a collector for measuring the cost of tracing)",
				Hidden: true,
				Flags:  []cli.Flag{&cli.IntFlag{Name: "port", Value: 4318, Usage: "port on 127.0.0.1 (0: a free one)"}},
				Action: func(c *cli.Context) error {
					ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
					defer stop()
					if err := bench.ServeOTLPSink(ctx, c.Int("port"), c.App.Writer); err != nil {
						return cli.Exit("eventstore: "+err.Error(), 1)
					}
					return nil
				},
			},
			{
				Name:   bench.BaselineSubcommand,
				Usage:  "serve the baseline scenario's trivial handler (started by bench)",
				Hidden: true,
				Flags:  []cli.Flag{&cli.IntFlag{Name: "port", Usage: "port on 127.0.0.1 (0: a free one)"}},
				Action: serveBaseline,
			},
		},
	}
}

func benchFlags() []cli.Flag {
	scenarios := strings.Join(bench.ScenarioNames(), ", ")
	return append([]cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "base URL of a running service, or the comma-separated URLs of its nodes on one PostgreSQL database (default: start one)"},
		&cli.StringFlag{Name: "postgres-url", Usage: "start the servers in PostgreSQL mode on this database instead of with a temporary data directory"},
		&cli.IntFlag{Name: "nodes", Value: 1, Usage: "servers to start on --postgres-url; requests go to each in turn"},
		&cli.StringSliceFlag{Name: "scenario", Value: cli.NewStringSlice(bench.ScenarioNames()...), Usage: "scenarios to run, in this order: " + scenarios + "; and, when named, " + strings.Join(bench.NamedOnlyScenarios(), ", ")},
		&cli.IntFlag{Name: "prefill", Usage: "events to write before the scenarios, untimed (batches of 1,000, a hundred events per subject)"},
		&cli.GenericFlag{Name: "server-flag", Value: &repeated{}, Usage: "flag for the server bench starts, e.g. --server-flag=--memory-limit=256MiB (repeatable)"},
		&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "duration of each write and observe scenario"},
		&cli.IntFlag{Name: "slices", Value: 1, Usage: "run consecutive baseline, write and write-precondition scenarios alternately in this many slices of --duration/N each, so that a change of the machine's load hits them alike (1: back to back); so too the dcb scenario's pairs"},
		&cli.IntFlag{Name: "clients", Value: 64, Usage: "concurrent clients of the write, write-precondition and baseline scenarios (one event per request)"},
		&cli.IntFlag{Name: "batch-clients", Value: 16, Usage: "concurrent clients of the batch scenario"},
		&cli.IntFlag{Name: "batch-size", Value: 100, Usage: "events per request of the batch scenario"},
		&cli.IntFlag{Name: "read-events", Value: 100_000, Usage: "events of the subject the read scenario reads"},
		&cli.IntFlag{Name: "observers", Value: 100, Usage: "observers of the observe scenario"},
		&cli.IntFlag{Name: "observe-rate", Value: 1000, Usage: "events per second written in the observe scenario"},
		&cli.IntFlag{Name: "query-events", Value: 1_000_000, Usage: "events the query scenario writes (1% of them of the type it selects)"},
		&cli.IntFlag{Name: "backup-events", Value: 1_000_000, Usage: "events of the store the backup scenario backs up and restores (it fills the store up to this)"},
		&cli.IntFlag{Name: "subscription-events", Value: 1_000_000, Usage: "backlog the subscription scenario writes and drains (its live part writes at --observe-rate for --duration)"},
		&cli.IntFlag{Name: "dcb-events", Value: 1_000_000, Usage: "events of the decisions' type the dcb scenario writes on 10,000 courses before it decides on them"},
		&cli.IntFlag{Name: "erase-events", Value: 1_000_000, Usage: "events of the store the erase scenario writes, one in a thousand on the subject it erases while --clients writers run (needs an admin token)"},
		&cli.BoolFlag{Name: "dcb-index", Value: true, Usage: "the dcb scenario registers a data index on the events' tags once they are written, and measures its build; --dcb-index=false decides without one"},
		&cli.IntFlag{Name: "access-tokens", Usage: "start the server with an access file of this many named tokens (bench's own the last, with every grant but admin) instead of --api-token"},
		&cli.StringFlag{Name: "json", Usage: "write the results to this file, machine-readable"},
		&cli.StringFlag{Name: "compare", Usage: "compare the results with those of an earlier --json file"},
		toleranceFlag(),
	}, tokenFlags()...)
}

func toleranceFlag() cli.Flag {
	return &cli.Float64Flag{Name: "tolerance", Value: 0.10, Usage: "change of events/s or p99 beyond which --compare flags a regression"}
}

// repeated is a flag value that collects every occurrence, commas and all.
type repeated struct{ values []string }

func (r *repeated) Set(v string) error { r.values = append(r.values, v); return nil }
func (r *repeated) String() string     { return strings.Join(r.values, " ") }

func runBench(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: bench takes flags only (or: bench compare OLD.json NEW.json)", c.Args().First()))
	}
	scenarios := c.StringSlice("scenario")
	if err := bench.CheckScenarios(scenarios); err != nil {
		return usageError(err)
	}
	if c.Int("slices") < 1 || c.Duration("duration")/time.Duration(max(1, c.Int("slices"))) < 100*time.Millisecond {
		return usageError(fmt.Errorf("--slices must be at least 1 and leave slices of at least 100ms of --duration"))
	}
	for _, name := range []string{"clients", "batch-clients", "batch-size", "observe-rate"} {
		if c.Int(name) < 1 {
			return usageError(fmt.Errorf("--%s must be at least 1, got %d", name, c.Int(name)))
		}
	}
	for _, name := range []string{"read-events", "observers", "query-events", "backup-events", "subscription-events", "dcb-events", "access-tokens"} {
		if c.Int(name) < 0 {
			return usageError(fmt.Errorf("--%s must not be negative, got %d", name, c.Int(name)))
		}
	}
	serverFlags := c.Generic("server-flag").(*repeated).values
	if c.String("url") != "" && (len(serverFlags) > 0 || c.String("postgres-url") != "" || c.IsSet("nodes") || c.IsSet("access-tokens")) {
		return usageError(fmt.Errorf("--server-flag, --postgres-url, --nodes and --access-tokens apply to the servers bench starts, not to --url"))
	}
	if c.Int("nodes") < 1 || c.Int("nodes") > 1 && c.String("postgres-url") == "" {
		return usageError(fmt.Errorf("--nodes must be at least 1, and more than 1 only with --postgres-url (the nodes share its database)"))
	}
	var older *bench.Report
	if path := c.String("compare"); path != "" {
		r, err := bench.ReadReport(path)
		if err != nil {
			return usageError(err)
		}
		older = &r
	}
	self, err := os.Executable()
	if err != nil {
		return cli.Exit("eventstore: bench: "+err.Error(), 1)
	}
	var token string
	if c.String("url") == "" {
		secret := make([]byte, 24)
		_, _ = rand.Read(secret)
		token = hex.EncodeToString(secret)
	} else if token, err = tokenOf(c); err != nil {
		return usageError(err)
	}
	env := environment(c)
	report, err := bench.Run(c.Context, c.App.Writer, bench.Options{
		URL: c.String("url"), Token: token, Binary: self, ServerFlags: serverFlags, Nodes: c.Int("nodes"), PostgresURL: c.String("postgres-url"),
		Scenarios: scenarios, Prefill: c.Int("prefill"), Duration: c.Duration("duration"), Slices: c.Int("slices"),
		Clients: c.Int("clients"), BatchClients: c.Int("batch-clients"), BatchSize: c.Int("batch-size"),
		ReadEvents: c.Int("read-events"), Observers: c.Int("observers"), ObserveRate: c.Int("observe-rate"), QueryEvents: c.Int("query-events"),
		BackupEvents: c.Int("backup-events"), SubscriptionEvents: c.Int("subscription-events"), DCBEvents: c.Int("dcb-events"), DCBIndex: c.Bool("dcb-index"), EraseEvents: c.Int("erase-events"), AccessTokens: c.Int("access-tokens"),
	})
	if err != nil {
		return cli.Exit("eventstore: bench: "+err.Error(), 1)
	}
	report.Environment = env
	if path := c.String("json"); path != "" {
		if err := bench.WriteReport(path, report); err != nil {
			return cli.Exit("eventstore: bench: "+err.Error(), 1)
		}
		fmt.Fprintf(c.App.Writer, "results written to %s\n", path)
	}
	if older != nil {
		bench.PrintComparison(c.App.Writer, *older, bench.Compare(*older, report, c.Float64("tolerance")), c.Float64("tolerance"))
	}
	return nil
}

// environment describes the run: the machine, this binary and the bench
// flags in effect (the token left out).
func environment(c *cli.Context) bench.Environment {
	env := bench.HostEnvironment()
	b := buildInfo()
	env.Version, env.Revision, env.GoVersion = b.Version, b.Revision, b.GoVersion
	env.Server = "started by bench"
	if url := c.String("url"); url != "" {
		env.Server = url
	}
	env.Setup = bench.Setup(c.String("url"), c.String("postgres-url") != "", c.Int("nodes"))
	if n := c.Int("access-tokens"); n > 0 {
		env.Setup += fmt.Sprintf(", %d tokens", n)
	}
	env.Flags = map[string]string{}
	for _, f := range benchFlags() {
		name := f.Names()[0]
		switch f.(type) {
		case *cli.StringSliceFlag:
			env.Flags[name] = strings.Join(c.StringSlice(name), ",")
		case *cli.GenericFlag:
			env.Flags[name] = c.Generic(name).(*repeated).String()
		default:
			env.Flags[name] = fmt.Sprint(c.Value(name))
		}
	}
	delete(env.Flags, "token")
	delete(env.Flags, "token-file")
	delete(env.Flags, "postgres-url") // it may hold a password
	return env
}

// compareReports is `bench compare OLD.json NEW.json`.
func compareReports(c *cli.Context) error {
	if c.Args().Len() != 2 {
		return usageError(fmt.Errorf("bench compare needs two reports: OLD.json NEW.json"))
	}
	older, err := bench.ReadReport(c.Args().Get(0))
	if err != nil {
		return usageError(err)
	}
	newer, err := bench.ReadReport(c.Args().Get(1))
	if err != nil {
		return usageError(err)
	}
	tolerance := c.Float64("tolerance")
	bench.PrintComparison(c.App.Writer, older, bench.Compare(older, newer, tolerance), tolerance)
	return nil
}

// summarizeReports is `bench summary REPORT.json...`.
func summarizeReports(c *cli.Context) error {
	if c.Args().Len() == 0 {
		return usageError(fmt.Errorf("bench summary needs reports of bench --json"))
	}
	var reports []bench.Report
	for _, path := range c.Args().Slice() {
		r, err := bench.ReadReport(path)
		if err != nil {
			return usageError(err)
		}
		reports = append(reports, r)
	}
	bench.PrintSummary(c.App.Writer, reports)
	return nil
}

// serveBaseline is the hidden `bench baseline-server`, with the runtime
// settings of `eventstore run`, until SIGTERM or SIGINT.
func serveBaseline(c *cli.Context) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent())
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := bench.ServeBaseline(ctx, c.Int("port"), c.App.Writer); err != nil {
		return cli.Exit("eventstore: "+err.Error(), 1)
	}
	return nil
}
