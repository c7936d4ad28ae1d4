package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Options configure Run.
type Options struct {
	// URL and Token name a running service; URL may name several nodes of
	// one PostgreSQL database, comma-separated. Without URL, Run starts
	// Nodes servers (at least one): `Binary run` with ServerFlags and a
	// temporary data directory, or in PostgreSQL mode on PostgresURL.
	URL, Token  string
	Binary      string
	ServerFlags []string
	// AccessTokens, unless 0, starts the servers with an access file of
	// that many named tokens instead of --api-token: Token is the last of
	// them, with grants of every kind but admin, so that every request
	// goes through the permission checks.
	AccessTokens int
	Nodes        int
	PostgresURL  string
	// Scenarios run in this order; ScenarioNames lists them.
	Scenarios []string
	// Prefill events are written before the scenarios, untimed.
	Prefill int
	// Duration is that of each write and observe scenario.
	Duration time.Duration
	// Slices is the number of slices in which consecutive baseline, write
	// and write-precondition scenarios alternate (1: back to back).
	Slices int
	// Clients is the write, write-precondition and baseline concurrency.
	Clients, BatchClients, BatchSize                int
	ReadEvents, Observers, ObserveRate, QueryEvents int
	// BackupEvents is the size of the store the backup scenario backs up.
	BackupEvents int
	// SubscriptionEvents is the backlog the subscription scenario drains.
	SubscriptionEvents int
	// DCBEvents is the size of the store the dcb scenario decides on;
	// DCBIndex has it register a data index on the tags first.
	DCBEvents int
	DCBIndex  bool
	// EraseEvents is the size of the store the erase scenario erases the
	// events of one subject in (one in a thousand).
	EraseEvents int
}

// ScenarioNames are the scenarios Run knows, in the order of a full run.
func ScenarioNames() []string {
	return []string{"baseline", "write", "write-precondition", "batch", "schema", "read", "observe", "query", "precondition-stall", "backup", "subscription"}
}

// NamedOnlyScenarios are the scenarios Run knows that a full run leaves
// out: follow, meant for several nodes of one PostgreSQL database, and
// dcb and erase, which write a store of their own size.
func NamedOnlyScenarios() []string { return []string{"follow", "dcb", "erase"} }

// CheckScenarios reports the first of names that is no scenario.
func CheckScenarios(names []string) error {
	known := append(ScenarioNames(), NamedOnlyScenarios()...)
	for _, name := range names {
		if !slices.Contains(known, name) {
			return fmt.Errorf("unknown scenario %q (%s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// runner carries a run from one scenario to the next.
type runner struct {
	ctx    context.Context
	out    io.Writer
	opts   Options
	target Target
	server *Server // nil against a running service
	report Report
	// baseline is the baseline's requests/s once measured; write and
	// precondition the latest records of those scenarios.
	baseline            float64
	write, precondition Record
}

// Run starts the server unless opts.URL names one, pre-fills the store,
// runs the scenarios one after the other and prints their figures to out
// as it goes. The report it returns leaves Environment to the caller.
func Run(ctx context.Context, out io.Writer, opts Options) (Report, error) {
	if err := CheckScenarios(opts.Scenarios); err != nil {
		return Report{}, err
	}
	r := &runner{ctx: ctx, out: out, opts: opts}
	if opts.URL != "" {
		r.target = NewTarget(opts.Token, strings.Split(opts.URL, ",")...)
	} else {
		flags := opts.ServerFlags
		if opts.AccessTokens > 0 {
			file, err := writeAccessFile(opts.Token, opts.AccessTokens)
			if err != nil {
				return Report{}, err
			}
			defer os.Remove(file)
			flags = append(slices.Clip(flags), "--access-file="+file)
		}
		server, err := StartServers(opts.Binary, opts.Token, max(1, opts.Nodes), opts.PostgresURL, flags...)
		if err != nil {
			return Report{}, err
		}
		defer server.Stop()
		r.server, r.target = server, server.Target
		storage := "temporary data directory"
		if opts.PostgresURL != "" {
			storage = "PostgreSQL mode on --postgres-url; server figures leave PostgreSQL's own processes out"
		}
		fmt.Fprintf(out, "server: %s (started by bench, %s%s)\n", strings.Join(r.target.Nodes, " "), storage, flagList(flags))
	}
	if opts.Prefill > 0 {
		if err := r.prefill(); err != nil {
			return Report{}, err
		}
	}
	for i := 0; i < len(opts.Scenarios); {
		group := alternatingGroup(opts.Scenarios[i:])
		var err error
		if len(group) > 0 {
			err = r.runAlternating(group)
		} else {
			group = opts.Scenarios[i : i+1]
			err = r.run(group[0])
		}
		if err != nil {
			return Report{}, fmt.Errorf("%s: %w", strings.Join(group, ", "), err)
		}
		i += len(group)
	}
	r.finish()
	return r.report, nil
}

// flagList formats the extra server flags for the server line.
func flagList(flags []string) string {
	if len(flags) == 0 {
		return ""
	}
	return ", " + strings.Join(flags, " ")
}

// run runs one scenario other than those runAlternating runs.
func (r *runner) run(scenario string) error {
	o := r.opts
	switch scenario {
	case "batch":
		r.measure(scenario, r.server, func() Result {
			return r.target.Write(r.ctx, fmt.Sprintf("write %d/request x%d", o.BatchSize, o.BatchClients), EventType, o.BatchClients, o.BatchSize, o.Duration)
		})
	case "schema":
		// The batch scenario on a type bound to a schema the events match.
		validated := fmt.Sprintf("io.eventstore.bench.validated%d", time.Now().UnixNano())
		if err := r.target.RegisterSchema(r.ctx, validated, EventSchema); err != nil {
			return err
		}
		r.measure(scenario, r.server, func() Result {
			return r.target.Write(r.ctx, fmt.Sprintf("schema %d/request x%d", o.BatchSize, o.BatchClients), validated, o.BatchClients, o.BatchSize, o.Duration)
		})
	case "read":
		subject := fmt.Sprintf("/bench/read/%d", time.Now().UnixNano())
		if err := r.target.Fill(r.ctx, subject, o.ReadEvents); err != nil {
			return err
		}
		r.measure(scenario, r.server, func() Result {
			return r.target.Read(r.ctx, fmt.Sprintf("read subject of %d", o.ReadEvents), subject, 5)
		})
	case "observe":
		return r.runObserve()
	case "query":
		return r.runQuery()
	case "precondition-stall":
		return r.runStall()
	case "backup":
		return r.runBackup()
	case "subscription":
		return r.runSubscription()
	case "follow":
		return r.runFollow()
	case "dcb":
		return r.runDCB()
	case "erase":
		return r.runErase()
	}
	return nil
}
