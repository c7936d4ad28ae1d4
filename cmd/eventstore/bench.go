package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/bench"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "drive the HTTP API with load and print events/s and latency percentiles",
		Description: "Without --url, bench starts its own server (this binary, temporary data directory, free port)\n" +
			"and also reports the server's CPU time per event and its memory.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "base URL of a running service (default: start one)"},
			&cli.StringFlag{Name: "token", Usage: "API token of the service at --url"},
			&cli.StringSliceFlag{Name: "scenario", Value: cli.NewStringSlice("write", "batch", "schema", "read", "observe", "query"), Usage: "scenarios to run: write, batch, schema, read, observe, query"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "duration of each write scenario"},
			&cli.IntFlag{Name: "clients", Value: 64, Usage: "concurrent clients of the write scenario (one event per request)"},
			&cli.IntFlag{Name: "batch-clients", Value: 16, Usage: "concurrent clients of the batch scenario"},
			&cli.IntFlag{Name: "batch-size", Value: 100, Usage: "events per request of the batch scenario"},
			&cli.IntFlag{Name: "read-events", Value: 100_000, Usage: "events of the subject the read scenario reads"},
			&cli.IntFlag{Name: "observers", Value: 100, Usage: "observers of the observe scenario"},
			&cli.IntFlag{Name: "observe-rate", Value: 1000, Usage: "events per second written in the observe scenario"},
			&cli.IntFlag{Name: "query-events", Value: 1_000_000, Usage: "events the query scenario writes (1% of them of the type it selects)"},
		},
		Action: runBench,
	}
}

func runBench(c *cli.Context) error {
	target := bench.Target{URL: c.String("url"), Token: c.String("token")}
	var server *bench.Server
	if target.URL == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		token := make([]byte, 24)
		_, _ = rand.Read(token)
		if server, err = bench.StartServer(self, hex.EncodeToString(token)); err != nil {
			return cli.Exit("eventstore: bench: "+err.Error(), 1)
		}
		defer server.Stop()
		target = server.Target
		fmt.Fprintf(c.App.Writer, "server: %s (started by bench, temporary data directory)\n", target.URL)
	}
	out := c.App.Writer
	report := func(r bench.Result, before bench.Usage) {
		fmt.Fprintln(out, r)
		if server == nil {
			return
		}
		after, err := server.Usage()
		if err != nil || r.Events == 0 {
			return
		}
		cpu := after.CPU - before.CPU
		fmt.Fprintf(out, "%-28s server CPU %6.2f s (%5.1f µs/event, %3.0f%% of one core), RSS %4d MiB, peak %4d MiB\n", "",
			cpu.Seconds(), float64(cpu.Microseconds())/float64(r.Events), 100*cpu.Seconds()/r.Elapsed.Seconds(), after.RSS>>20, after.PeakRSS>>20)
	}
	usage := func() bench.Usage {
		if server == nil {
			return bench.Usage{}
		}
		u, _ := server.Usage()
		return u
	}
	for _, scenario := range c.StringSlice("scenario") {
		switch scenario {
		case "write":
			before := usage()
			report(target.Write(c.Context, fmt.Sprintf("write 1/request x%d", c.Int("clients")), bench.EventType, c.Int("clients"), 1, c.Duration("duration")), before)
		case "batch":
			before := usage()
			report(target.Write(c.Context, fmt.Sprintf("write %d/request x%d", c.Int("batch-size"), c.Int("batch-clients")), bench.EventType, c.Int("batch-clients"), c.Int("batch-size"), c.Duration("duration")), before)
		case "schema":
			// The batch scenario on a type bound to a schema the events match.
			validated := fmt.Sprintf("io.eventstore.bench.validated%d", time.Now().UnixNano())
			if err := target.RegisterSchema(c.Context, validated, bench.EventSchema); err != nil {
				return cli.Exit("eventstore: bench: "+err.Error(), 1)
			}
			before := usage()
			report(target.Write(c.Context, fmt.Sprintf("schema %d/request x%d", c.Int("batch-size"), c.Int("batch-clients")), validated, c.Int("batch-clients"), c.Int("batch-size"), c.Duration("duration")), before)
		case "read":
			n := c.Int("read-events")
			subject := fmt.Sprintf("/bench/read/%d", time.Now().UnixNano())
			if err := target.Fill(c.Context, subject, n); err != nil {
				return cli.Exit("eventstore: bench: "+err.Error(), 1)
			}
			before := usage()
			report(target.Read(c.Context, fmt.Sprintf("read subject of %d", n), subject, 5), before)
		case "observe":
			if err := runObserve(c, target, server); err != nil {
				return cli.Exit("eventstore: bench: "+err.Error(), 1)
			}
		case "query":
			if err := runQuery(c, target, report, usage); err != nil {
				return cli.Exit("eventstore: bench: "+err.Error(), 1)
			}
		default:
			return usageError(fmt.Errorf("unknown scenario %q (write, batch, schema, read, observe, query)", scenario))
		}
	}
	return nil
}

// runQuery runs the query scenario: an indexed EventQL selection of 1% of
// the events against read-events of the same events, and a full-scan
// COUNT() over the whole store.
func runQuery(c *cli.Context, target bench.Target, report func(bench.Result, bench.Usage), usage func() bench.Usage) error {
	n := c.Int("query-events")
	prefix := fmt.Sprintf("/bench/query/%d", time.Now().UnixNano())
	if err := target.FillMixed(c.Context, prefix, n); err != nil {
		return err
	}
	const rounds = 5
	out := c.App.Writer
	before := usage()
	selected := target.Query(c.Context, fmt.Sprintf("query type == (%d of %d)", n/100, n),
		fmt.Sprintf("FROM e IN events WHERE e.type == %q PROJECT INTO e", bench.RareEventType), rounds)
	report(selected, before)
	before = usage()
	read := target.Read(c.Context, fmt.Sprintf("read-events same %d", n/100), prefix+"/rare", rounds)
	report(read, before)
	fmt.Fprintf(out, "%-28s indexed query at %.2fx the speed of read-events\n", "", selected.EventsPerSecond()/read.EventsPerSecond())
	total, err := target.Count(c.Context)
	if err != nil {
		return err
	}
	before = usage()
	count := target.Query(c.Context, fmt.Sprintf("query COUNT() of %d", total), "FROM e IN events PROJECT INTO COUNT()", rounds)
	count.Events = total * count.Requests // every event is scanned
	report(count, before)
	return nil
}

// runObserve runs the observe scenario and reports the server's CPU and
// memory per observer when bench started the server.
func runObserve(c *cli.Context, target bench.Target, server *bench.Server) error {
	observers := c.Int("observers")
	var before, open bench.Usage
	if server != nil {
		before, _ = server.Usage()
	}
	res, err := target.Observe(c.Context, observers, c.Int("observe-rate"), c.Duration("duration"), func() {
		if server != nil {
			open, _ = server.Usage()
		}
	})
	if err != nil {
		return err
	}
	out := c.App.Writer
	fmt.Fprintln(out, res)
	if server != nil {
		after, _ := server.Usage()
		cpu := after.CPU - open.CPU
		fmt.Fprintf(out, "%-28s server CPU %6.2f s (%4.1f%% of one core; %.2f%% per observer), RSS +%.1f MiB for %d observers (%.0f KiB each)\n", "",
			cpu.Seconds(), 100*cpu.Seconds()/res.Elapsed.Seconds(), 100*cpu.Seconds()/res.Elapsed.Seconds()/float64(observers),
			float64(open.RSS-before.RSS)/(1<<20), observers, float64(open.RSS-before.RSS)/1024/float64(observers))
	}
	return nil
}
