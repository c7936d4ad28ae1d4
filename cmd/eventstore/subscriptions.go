package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/consumer"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

// subscriptionsCommand is `eventstore subscriptions`: the subscriptions of
// a running service (docs/api.md §4.14), through modules/consumer.
func subscriptionsCommand() *cli.Command {
	return &cli.Command{
		Name:         "subscriptions",
		Usage:        "manage the subscriptions of a running service: list, show, create, delete, reset, parked, replay",
		OnUsageError: onSubscriptionsUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError(fmt.Errorf("unknown subcommand %q of subscriptions (see eventstore subscriptions --help)", c.Args().First()))
			}
			return usageError(errors.New("a subcommand is required: list, show, create, delete, reset, parked or replay (see eventstore subscriptions --help)"))
		},
		Subcommands: []*cli.Command{
			subscriptionsSubcommand("list", "list the subscriptions: subject, lag, consumers, deliveries in flight, parked events", "",
				0, 0, listSubscriptions),
			subscriptionsSubcommand("show", "show a subscription: its definition, options, consumers and partitions", "NAME",
				1, 1, showSubscription),
			subscriptionsSubcommand("create", "create a subscription on the events of a subject (the same definition again changes nothing)", "NAME SUBJECT",
				2, 2, createSubscription,
				&cli.BoolFlag{Name: "recursive", Usage: "include the events of the subject's subtree"},
				&cli.StringSliceFlag{Name: "event-type", Usage: "only events of this type (repeatable; without it, every type)"},
				&cli.StringFlag{Name: "start", Value: "beginning", Usage: "where to begin: beginning, end or after an event id"},
				&cli.IntFlag{Name: "partitions", Value: 1, Usage: "partitions, by subject (1-1024)"},
				&cli.IntFlag{Name: "max-in-flight", Value: 100, Usage: "unsettled deliveries per partition (1-10000)"},
				&cli.DurationFlag{Name: "acknowledge-timeout", Value: 30 * time.Second, Usage: "time after which an unsettled delivery is sent again (1s-1h)"},
				&cli.IntFlag{Name: "max-deliveries", Value: 10, Usage: "attempts after which an event is parked (1-1000)"},
			),
			subscriptionsSubcommand("delete", "delete a subscription and its state (asks nothing)", "NAME",
				1, 1, deleteSubscription),
			subscriptionsSubcommand("reset", "move every partition of a subscription to --start (a rebuild); parked events stay parked", "NAME",
				1, 1, resetSubscription,
				&cli.StringFlag{Name: "start", Value: "beginning", Usage: "beginning, end or after an event id"},
			),
			subscriptionsSubcommand("parked", "list the parked events of a subscription", "NAME",
				1, 1, listParked),
			subscriptionsSubcommand("replay", "deliver parked events once more: those with the given ids, or all", "NAME [EVENT-ID...]",
				1, -1, replayParked),
		},
	}
}

// onSubscriptionsUsageError makes a flag error a usage error: one line on
// stderr, exit 2.
func onSubscriptionsUsageError(_ *cli.Context, err error, _ bool) error { return usageError(err) }

// subscriptionsCall is one run of a subcommand.
type subscriptionsCall struct {
	c      *cli.Context
	client *consumer.Client
	out    io.Writer
	json   bool
	args   []string
}

// subscriptionsSubcommand returns a subcommand taking minArgs to maxArgs
// (-1: any number) arguments, the remote flags, --json and flags.
func subscriptionsSubcommand(name, usage, argsUsage string, minArgs, maxArgs int, action func(*subscriptionsCall) error, flags ...cli.Flag) *cli.Command {
	all := append(remoteFlags(), &cli.BoolFlag{Name: "json", Usage: "print the service's JSON as it is instead of text"})
	return &cli.Command{
		Name:         name,
		Usage:        usage,
		ArgsUsage:    argsUsage,
		Flags:        append(all, flags...),
		OnUsageError: onSubscriptionsUsageError,
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			for _, a := range args {
				if isFlagOf(c.Command, a) {
					return usageError(fmt.Errorf("flag %s after the arguments: flags go first (eventstore subscriptions %s [flags] %s)", a, name, argsUsage))
				}
			}
			if len(args) < minArgs || (maxArgs >= 0 && len(args) > maxArgs) {
				want := "no arguments"
				if argsUsage != "" {
					want = argsUsage
				}
				return usageError(fmt.Errorf("subscriptions %s takes %s, got %d %s (see --help)", name, want, len(args), plural(len(args), "argument", "arguments")))
			}
			r, err := newRemote(c)
			if err != nil {
				return usageError(err)
			}
			call := &subscriptionsCall{c: c, client: consumer.NewClient(r.url, r.token, r.client), out: c.App.Writer, json: c.Bool("json"), args: args}
			if err := action(call); err != nil {
				var usage usageProblem
				if errors.As(err, &usage) {
					return usageError(err)
				}
				return cli.Exit("eventstore: subscriptions "+name+": "+err.Error(), lifecycle.ExitFailure)
			}
			return nil
		},
	}
}

// usageProblem is an error of a subcommand's flag values, found after the
// flags were parsed.
type usageProblem struct{ error }

// isFlagOf reports whether arg names one of cmd's flags (as
// --name, -name or --name=value).
func isFlagOf(cmd *cli.Command, arg string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return name == "help" || name == "h"
}

// writeRaw prints JSON values one a line.
func (s *subscriptionsCall) writeRaw(values ...[]byte) {
	for _, v := range values {
		fmt.Fprintf(s.out, "%s\n", v)
	}
}

func listSubscriptions(s *subscriptionsCall) error {
	list, err := s.client.List(s.c.Context)
	if err != nil {
		return err
	}
	if s.json {
		for _, sub := range list {
			s.writeRaw(sub.Raw)
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(s.out, "no subscriptions")
		return nil
	}
	tw := newTable(s.out)
	fmt.Fprintln(tw, "NAME\tSUBJECT\tLAG\tCONSUMERS\tIN FLIGHT\tPARKED")
	for _, sub := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", sub.Name, subjectText(sub), sub.Lag, len(sub.Consumers), sub.InFlight, sub.Parked)
	}
	return tw.Flush()
}

func showSubscription(s *subscriptionsCall) error {
	sub, err := s.client.Get(s.c.Context, s.args[0])
	if err != nil {
		return err
	}
	return s.printSubscription(sub)
}

func createSubscription(s *subscriptionsCall) error {
	c := s.c
	opts := consumer.Options{Recursive: c.Bool("recursive")}
	if c.IsSet("event-type") {
		opts.EventTypes = c.StringSlice("event-type")
	}
	if c.IsSet("start") {
		start, err := consumer.ParseStart(c.String("start"))
		if err != nil {
			return usageProblem{fmt.Errorf("--start: %w", err)}
		}
		opts.Start = start
	}
	for _, n := range []struct {
		flag string
		into *int
	}{{"partitions", &opts.Partitions}, {"max-in-flight", &opts.MaxInFlight}, {"max-deliveries", &opts.MaxDeliveries}} {
		if c.IsSet(n.flag) {
			if *n.into = c.Int(n.flag); *n.into < 1 {
				return usageProblem{fmt.Errorf("--%s must be at least 1", n.flag)}
			}
		}
	}
	if c.IsSet("acknowledge-timeout") {
		if opts.AcknowledgeTimeout = c.Duration("acknowledge-timeout"); opts.AcknowledgeTimeout <= 0 {
			return usageProblem{errors.New("--acknowledge-timeout must be greater than 0")}
		}
	}
	sub, err := s.client.Create(c.Context, s.args[0], s.args[1], opts)
	if err != nil {
		return err
	}
	return s.printSubscription(sub)
}

func deleteSubscription(s *subscriptionsCall) error {
	name := s.args[0]
	if err := s.client.Delete(s.c.Context, name); err != nil {
		return err
	}
	if s.json {
		raw, _ := json.Marshal(struct {
			Subscription string `json:"subscription"`
			Deleted      bool   `json:"deleted"`
		}{name, true})
		s.writeRaw(raw)
		return nil
	}
	fmt.Fprintf(s.out, "deleted subscription %s\n", name)
	return nil
}

func resetSubscription(s *subscriptionsCall) error {
	start, err := consumer.ParseStart(s.c.String("start"))
	if err != nil {
		return usageProblem{fmt.Errorf("--start: %w", err)}
	}
	sub, err := s.client.Reset(s.c.Context, s.args[0], start)
	if err != nil {
		return err
	}
	if !s.json {
		fmt.Fprintf(s.out, "reset subscription %s to %s\n\n", sub.Name, start)
	}
	return s.printSubscription(sub)
}

func listParked(s *subscriptionsCall) error {
	parked, err := s.client.Parked(s.c.Context, s.args[0])
	if err != nil {
		return err
	}
	if s.json {
		for _, p := range parked {
			s.writeRaw(p.Raw)
		}
		return nil
	}
	if len(parked) == 0 {
		fmt.Fprintf(s.out, "no parked events in %s\n", s.args[0])
		return nil
	}
	tw := newTable(s.out)
	fmt.Fprintln(tw, "EVENT\tSUBJECT\tTYPE\tPARTITION\tATTEMPTS\tPARKED AT\tREASON")
	for _, p := range parked {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", p.Event.ID, p.Event.Subject, p.Event.Type, p.Partition, p.Attempts,
			timeText(p.ParkedAt), orDash(oneLine(p.Reason)))
	}
	return tw.Flush()
}

func replayParked(s *subscriptionsCall) error {
	name, ids := s.args[0], s.args[1:]
	for _, id := range ids {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			return usageProblem{fmt.Errorf("%q is no event id", id)}
		}
	}
	replay := func() (int, error) { return s.client.Replay(s.c.Context, name, ids...) }
	if len(ids) == 0 { // the command's word for all
		replay = func() (int, error) { return s.client.ReplayAll(s.c.Context, name) }
	}
	n, err := replay()
	if err != nil {
		return err
	}
	if s.json {
		s.writeRaw([]byte(`{"replayed":` + strconv.Itoa(n) + `}`))
		return nil
	}
	fmt.Fprintf(s.out, "replayed %d parked %s of %s\n", n, plural(n, "event", "events"), name)
	return nil
}

// printSubscription prints a subscription: its JSON with --json, else its
// definition, state, consumers and partitions as aligned text.
func (s *subscriptionsCall) printSubscription(sub consumer.Subscription) error {
	if s.json {
		s.writeRaw(sub.Raw)
		return nil
	}
	o := sub.Options
	types := "all"
	if o.EventTypes != nil {
		types = strings.Join(o.EventTypes, ", ")
	}
	tw := newTable(s.out)
	for _, row := range [][2]string{
		{"subscription", sub.Name},
		{"subject", subjectText(sub)},
		{"event types", types},
		{"start", o.Start.String()},
		{"partitions", strconv.Itoa(o.Partitions)},
		{"max in flight", strconv.Itoa(o.MaxInFlight)},
		{"acknowledge timeout", o.AcknowledgeTimeout.String()},
		{"max deliveries", strconv.Itoa(o.MaxDeliveries)},
		{"created at", timeText(sub.CreatedAt)},
		{"lag", strconv.FormatUint(sub.Lag, 10)},
		{"in flight", strconv.Itoa(sub.InFlight)},
		{"parked", strconv.Itoa(sub.Parked)},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(s.out)
	if len(sub.Consumers) == 0 {
		fmt.Fprintln(s.out, "no consumers connected")
	} else {
		fmt.Fprintln(tw, "CONSUMER\tCONNECTED AT\tPARTITIONS")
		for _, c := range sub.Consumers {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, timeText(c.ConnectedAt), orDash(intsText(c.Partitions)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(s.out)
	fmt.Fprintln(tw, "PARTITION\tPOSITION\tCONSUMER\tEPOCH\tIN FLIGHT")
	for _, p := range sub.Partitions {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\n", p.Partition, orDash(p.Position), orDash(p.Consumer), p.Epoch, p.InFlight)
	}
	return tw.Flush()
}

// newTable returns a writer that aligns tab-separated columns.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// subjectText is a subscription's subject, marked when recursive.
func subjectText(sub consumer.Subscription) string {
	if sub.Options.Recursive {
		return sub.Subject + " (recursive)"
	}
	return sub.Subject
}

// timeText is t in UTC to the second.
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// intsText joins numbers with commas.
func intsText(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a table row on one line.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == '\t' }), " ")
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
