package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// remoteFlags are the flags of the commands that talk to a running
// service: its URL and the API token (from a file, or given).
func remoteFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "base URL of the running service, e.g. http://127.0.0.1:3000"},
	}, tokenFlags()...)
}

// tokenFlags are the flags that give the API token of a running service.
func tokenFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "token-file", Usage: "read the API token from this file (whitespace-trimmed)"},
		&cli.StringFlag{Name: "token", EnvVars: []string{"EVENTSTORE_API_TOKEN"}, Usage: "the API token (prefer --token-file)"},
	}
}

// tokenOf reads the token flags; its error is a usage error.
func tokenOf(c *cli.Context) (string, error) {
	token, file := c.String("token"), c.String("token-file")
	switch {
	case file != "" && c.IsSet("token"):
		return "", fmt.Errorf("--token and --token-file cannot be combined, use one of them")
	case file != "":
		raw, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if token == "" {
		return "", fmt.Errorf("an API token is required: set --token-file or --token")
	}
	return token, nil
}

// remote is a running service a command talks to.
type remote struct {
	url, token string
	client     *http.Client
}

// newRemote reads the remote flags; its error is a usage error.
func newRemote(c *cli.Context) (*remote, error) {
	url := strings.TrimSuffix(c.String("url"), "/")
	if url == "" {
		return nil, fmt.Errorf("--url is required")
	}
	token, err := tokenOf(c)
	if err != nil {
		return nil, err
	}
	return &remote{url: url, token: token, client: &http.Client{}}, nil
}

// do sends a request to path and returns the response when it is 200; any
// other status is an error carrying the service's message.
func (r *remote) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.url+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}
