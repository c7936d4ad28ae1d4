package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := harness.WriteFile(t, dir, "empty-token", "  \n")
	dev := []string{"--data-directory-temporary", "--http-enabled", "--https-enabled=false"}
	cases := []usageCase{
		{"no command", nil, nil, "a command is required"},
		{"unknown command", []string{"serve"}, nil, `unknown command "serve"`},
		{"unknown flag", append([]string{"run", "--api-token=x", "--bogus"}, dev...), nil, "unknown flag --bogus"},
		{"boolean with a separate value", []string{"run", "--api-token=x", "--data-directory-temporary", "--http-enabled", "false"}, nil, `unexpected argument "false"`},
		{"bad port", append([]string{"run", "--api-token=x", "--http-port=abc"}, dev...), nil, `invalid value "abc" for --http-port`},
		{"bad env value", append([]string{"run", "--api-token=x"}, dev...), []string{"EVENTSTORE_SHUTDOWN_TIMEOUT=soon"}, "EVENTSTORE_SHUTDOWN_TIMEOUT"},
		{"no token", append([]string{"run"}, dev...), nil, "an API token is required"},
		{"two tokens", append([]string{"run", "--api-token=x", "--api-token-file=" + empty}, dev...), nil, "cannot be combined"},
		{"empty token file", append([]string{"run", "--api-token-file=" + empty}, dev...), nil, "holds no token"},
		{"no data directory", []string{"run", "--api-token=x", "--http-enabled", "--https-enabled=false"}, nil, "a data directory is required"},
		{"no listener", []string{"run", "--api-token=x", "--data-directory-temporary", "--https-enabled=false"}, nil, "no listener enabled"},
		{"https without certificate", []string{"run", "--api-token=x", "--data-directory-temporary"}, nil, "--https-certificate-file is required when HTTPS is enabled (disable HTTPS with --https-enabled=false)"},
		{"bad size", append([]string{"run", "--api-token=x", "--max-request-size=lots"}, dev...), nil, "--max-request-size"},
		{"negative duration", append([]string{"run", "--api-token=x", "--shutdown-timeout=-5s"}, dev...), nil, "--shutdown-timeout must not be negative"},
		{"bad log level", append([]string{"run", "--api-token=x", "--log-level=verbose"}, dev...), nil, "--log-level"},
		{"tiny query memory", append([]string{"run", "--api-token=x", "--eventql-memory-limit=512"}, dev...), nil, "--eventql-memory-limit must be at least 1KiB"},
		{"zero precondition timeout", append([]string{"run", "--api-token=x"}, dev...), []string{"EVENTSTORE_EVENTQL_PRECONDITION_TIMEOUT=0s"}, "--eventql-precondition-timeout must be greater than 0"},
		{"unreadable signing key", append([]string{"run", "--api-token=x", "--signing-key-file=" + filepath.Join(dir, "missing.pem")}, dev...), nil, "--signing-key-file"},
	}
	expectUsageErrors(t, cases)
}

// usageCase is a command line that must be refused as a usage error: exit
// 2, nothing started, one line on stderr containing want.
type usageCase struct {
	name string
	args []string
	env  []string // KEY=value
	want string
}

func expectUsageErrors(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, stdout, stderr := harness.Run(t, bin, 10*time.Second, tc.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Fatalf("a usage error started something: stdout %q", stdout)
			}
			if !strings.HasPrefix(stderr, "eventstore: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q, want one line starting with \"eventstore: \" containing %q", stderr, tc.want)
			}
		})
	}
}

func TestTokenFromFileAndEnvironment(t *testing.T) {
	path := harness.WriteFile(t, t.TempDir(), "token", "\n  file-token-0123456789-0123456789-abc \n")
	t.Setenv("EVENTSTORE_API_TOKEN_FILE", path)
	t.Setenv("EVENTSTORE_HTTP_ENABLED", "true")
	t.Setenv("EVENTSTORE_HTTPS_ENABLED", "false")
	t.Setenv("EVENTSTORE_DATA_DIRECTORY_TEMPORARY", "1")
	t.Setenv("EVENTSTORE_HTTP_PORT", "0")
	inst := harness.Start(t, bin, "run")
	if r := inst.Do("POST", "/api/v1/verify-api-token", "file-token-0123456789-0123456789-abc", ""); r.StatusCode != 200 {
		t.Fatalf("token from file (trimmed) rejected: %d", r.StatusCode)
	}
	if len(inst.Logs("api token is shorter than 32 characters")) != 0 {
		t.Fatal("a 36-character token drew the short-token warning")
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, stdout, stderr := harness.Run(t, bin, 10*time.Second, "version")
	if code != 0 || !regexp.MustCompile(`^eventstore \S+ \(revision \S+, go\d+\.\d+(\.\d+)?\)\n$`).MatchString(stdout) {
		t.Fatalf("version: %d %q %q", code, stdout, stderr)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"run", "--help"}} {
		code, stdout, _ := harness.Run(t, bin, 10*time.Second, args...)
		if code != 0 || !strings.Contains(stdout, "USAGE") {
			t.Fatalf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
	_, stdout, _ = harness.Run(t, bin, 10*time.Second, "run", "--help")
	for _, flag := range []string{"--api-token", "--api-token-file", "--data-directory", "--data-directory-temporary", "--http-enabled",
		"--http-port", "--https-enabled", "--https-port", "--https-certificate-file", "--https-private-key-file", "--with-ui",
		"--signing-key-file", "--log-level", "--shutdown-drain-period", "--shutdown-timeout", "--max-request-size",
		"--max-event-size", "--eventql-memory-limit", "--eventql-precondition-timeout"} {
		if !strings.Contains(stdout, flag+" ") && !strings.Contains(stdout, flag+"\t") {
			t.Errorf("run --help does not list %s", flag)
		}
		env := "EVENTSTORE_" + strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(flag, "--"), "-", "_"))
		if !strings.Contains(stdout, "$"+env) {
			t.Errorf("run --help does not name %s", env)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
}
