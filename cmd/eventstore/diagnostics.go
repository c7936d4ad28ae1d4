package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/lifecycle"
)

func diagnosticsCommand() *cli.Command {
	return &cli.Command{
		Name:   "diagnostics",
		Usage:  "print the diagnostics of a running service: versions, system, process, options (secrets redacted), storage",
		Flags:  remoteFlags(),
		Action: printDiagnostics,
	}
}

// printDiagnostics is `eventstore diagnostics`: GET /api/v1/diagnostics,
// printed as indented JSON.
func printDiagnostics(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: diagnostics takes no arguments", c.Args().First()))
	}
	r, err := newRemote(c)
	if err != nil {
		return usageError(err)
	}
	resp, err := r.do(c.Context, http.MethodGet, "/api/v1/diagnostics", nil)
	if err != nil {
		return cli.Exit("eventstore: diagnostics: "+err.Error(), lifecycle.ExitFailure)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	var out bytes.Buffer
	if err == nil {
		err = json.Indent(&out, raw, "", "  ")
	}
	if err != nil {
		return cli.Exit("eventstore: diagnostics: "+err.Error(), lifecycle.ExitFailure)
	}
	fmt.Fprintln(c.App.Writer, out.String())
	return nil
}
