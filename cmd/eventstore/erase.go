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

// eraseCommand is `eventstore erase`: POST /api/v1/erase-events
// (docs/api.md §4.16) to a running service.
func eraseCommand() *cli.Command {
	return &cli.Command{
		Name:  "erase",
		Usage: "erase the data of a subject's events in a running service (personal data), keeping the log verifiable",
		Flags: append(remoteFlags(),
			&cli.StringFlag{Name: "subject", Usage: "the subject whose events are erased (required)"},
			&cli.BoolFlag{Name: "recursive", Usage: "erase the events of the subject's descendants too"},
			&cli.StringSliceFlag{Name: "event-type", Usage: "erase only events of this type (repeatable)"},
			&cli.StringFlag{Name: "upper-bound", Usage: "erase only events up to this id (inclusive)"},
			&cli.StringFlag{Name: "reason", Usage: "why, recorded in the management event (required)"},
		),
		Action: runErase,
	}
}

// runErase sends the erasure and prints what it erased.
func runErase(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("unexpected argument %q: erase takes no arguments", c.Args().First()))
	}
	switch {
	case c.String("subject") == "":
		return usageError(fmt.Errorf("--subject is required"))
	case c.String("reason") == "":
		return usageError(fmt.Errorf("--reason is required"))
	}
	r, err := newRemote(c)
	if err != nil {
		return usageError(err)
	}
	req := map[string]any{"subject": c.String("subject"), "recursive": c.Bool("recursive"), "reason": c.String("reason")}
	if types := c.StringSlice("event-type"); len(types) > 0 {
		req["eventTypes"] = types
	}
	if c.IsSet("upper-bound") {
		req["upperBound"] = c.String("upper-bound")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	resp, err := r.do(c.Context, http.MethodPost, "/api/v1/erase-events", bytes.NewReader(body))
	if err != nil {
		return cli.Exit("eventstore: erase: "+err.Error(), lifecycle.ExitFailure)
	}
	defer resp.Body.Close()
	var answer struct {
		Erased int `json:"erased"`
		Event  *struct {
			ID   string          `json:"id"`
			Time string          `json:"time"`
			Data json.RawMessage `json:"data"`
		} `json:"event"`
	}
	raw, err := io.ReadAll(resp.Body)
	if err == nil {
		err = json.Unmarshal(raw, &answer)
	}
	if err != nil {
		return cli.Exit(fmt.Sprintf("eventstore: erase: the answer %q: %v", raw, err), lifecycle.ExitFailure)
	}
	if answer.Event == nil {
		fmt.Fprintf(c.App.Writer, "eventstore: erased 0 events of %s: none matched that was not erased before\n", c.String("subject"))
		return nil
	}
	var data struct {
		FirstID string `json:"firstId"`
		LastID  string `json:"lastId"`
	}
	_ = json.Unmarshal(answer.Event.Data, &data)
	fmt.Fprintf(c.App.Writer, "eventstore: erased %d events of %s (ids %s to %s), recorded by event %s at %s\n",
		answer.Erased, c.String("subject"), data.FirstID, data.LastID, answer.Event.ID, answer.Event.Time)
	return nil
}
