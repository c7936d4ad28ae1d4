package config

import (
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/subscriptions"
)

// Flag names of `eventstore run`.
const (
	FlagAPIToken                   = "api-token"
	FlagAPITokenFile               = "api-token-file"
	FlagAccessFile                 = "access-file"
	FlagDataDirectory              = "data-directory"
	FlagDataDirectoryTemporary     = "data-directory-temporary"
	FlagHTTPEnabled                = "http-enabled"
	FlagHTTPPort                   = "http-port"
	FlagHTTPAddress                = "http-address"
	FlagHTTPSEnabled               = "https-enabled"
	FlagHTTPSPort                  = "https-port"
	FlagHTTPSAddress               = "https-address"
	FlagHTTPSCertificateFile       = "https-certificate-file"
	FlagHTTPSPrivateKeyFile        = "https-private-key-file"
	FlagWithUI                     = "with-ui"
	FlagSigningKeyFile             = "signing-key-file"
	FlagLogLevel                   = "log-level"
	FlagShutdownDrainPeriod        = "shutdown-drain-period"
	FlagShutdownTimeout            = "shutdown-timeout"
	FlagMaxRequestSize             = "max-request-size"
	FlagMaxEventSize               = "max-event-size"
	FlagEventQLMemoryLimit         = "eventql-memory-limit"
	FlagEventQLPreconditionTimeout = "eventql-precondition-timeout"
	FlagEventQLQueryTimeout        = "eventql-query-timeout"
	FlagMemoryLimit                = "memory-limit"
	FlagMaxStreams                 = "max-streams"
	FlagMaxQueries                 = "max-queries"
	FlagReadOnly                   = "read-only"
	FlagStorageBackend             = "storage-backend"
	FlagPostgresURL                = "postgres-url"
	FlagPostgresURLFile            = "postgres-url-file"
	FlagPostgresMaxConnections     = "postgres-max-connections"
	FlagMaxConnections             = "max-connections"
	FlagRequestBodyIdleTimeout     = "request-body-idle-timeout"
	FlagRequestBodyTimeout         = "request-body-timeout"
	FlagMaxEventSchemas            = "max-event-schemas"
	FlagMaxDataIndexes             = "max-data-indexes"
	FlagMaxSubscriptions           = "max-subscriptions"
	FlagSubscriptionLeaseTimeout   = "subscription-lease-timeout"
	FlagOTelEnabled                = "otel-enabled"
	FlagMCPEnabled                 = "mcp-enabled"
	FlagMCPAllowWrites             = "mcp-allow-writes"
	FlagMCPMaxResults              = "mcp-max-results"
)

// EnvVar returns the environment variable that can set the named flag:
// EVENTSTORE_ followed by the flag name in upper snake case.
func EnvVar(flag string) string {
	return "EVENTSTORE_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Flags returns the command-line flags of `eventstore run`, each also read
// from its environment variable (command line > environment > default).
func Flags() []cli.Flag {
	env := func(name string) []string { return []string{EnvVar(name)} }
	return []cli.Flag{
		&cli.StringFlag{Name: FlagAPIToken, EnvVars: env(FlagAPIToken), Usage: "the API token clients must present (exactly one of --api-token and --api-token-file)"},
		&cli.StringFlag{Name: FlagAPITokenFile, EnvVars: env(FlagAPITokenFile), Usage: "read the API tokens from this file, one per line, whitespace-trimmed"},
		&cli.StringFlag{Name: FlagAccessFile, EnvVars: env(FlagAccessFile), Usage: "named tokens with grants from this YAML file (docs/operations.md, \"Access control\"), instead of the API token"},
		&cli.StringFlag{Name: FlagStorageBackend, EnvVars: env(FlagStorageBackend), Value: BackendPebble, Usage: "pebble (embedded, in the data directory) or postgres (shared by any number of nodes, no data directory)"},
		&cli.StringFlag{Name: FlagPostgresURL, EnvVars: env(FlagPostgresURL), Usage: "PostgreSQL connection URL of postgres mode (several hosts with target_session_attrs=read-write follow a failover)"},
		&cli.StringFlag{Name: FlagPostgresURLFile, EnvVars: env(FlagPostgresURLFile), Usage: "read the PostgreSQL URL from this file, whitespace-trimmed, once at start (exactly one of --postgres-url and --postgres-url-file)"},
		&cli.IntFlag{Name: FlagPostgresMaxConnections, EnvVars: env(FlagPostgresMaxConnections), Value: 16, Usage: "connections of this node's PostgreSQL pool (at least 2)"},
		&cli.StringFlag{Name: FlagDataDirectory, EnvVars: env(FlagDataDirectory), Usage: "directory of the persistent data, created 0700 if missing"},
		&cli.BoolFlag{Name: FlagDataDirectoryTemporary, EnvVars: env(FlagDataDirectoryTemporary), Usage: "use a new temporary data directory, removed on shutdown"},
		&cli.BoolFlag{Name: FlagHTTPEnabled, EnvVars: env(FlagHTTPEnabled), Usage: "serve plain HTTP (development and trusted networks only)"},
		&cli.IntFlag{Name: FlagHTTPPort, EnvVars: env(FlagHTTPPort), Value: 3000, Usage: "port of the HTTP listener (0 picks a free port)"},
		&cli.StringFlag{Name: FlagHTTPAddress, EnvVars: env(FlagHTTPAddress), Usage: "comma-separated IP addresses or host names the HTTP listener binds to (default: all interfaces)"},
		&cli.BoolFlag{Name: FlagHTTPSEnabled, EnvVars: env(FlagHTTPSEnabled), Value: true, Usage: "serve HTTPS; --https-enabled=false needs no certificate or key"},
		&cli.IntFlag{Name: FlagHTTPSPort, EnvVars: env(FlagHTTPSPort), Value: 4000, Usage: "port of the HTTPS listener (0 picks a free port)"},
		&cli.StringFlag{Name: FlagHTTPSAddress, EnvVars: env(FlagHTTPSAddress), Usage: "comma-separated IP addresses or host names the HTTPS listener binds to (default: all interfaces)"},
		&cli.StringFlag{Name: FlagHTTPSCertificateFile, EnvVars: env(FlagHTTPSCertificateFile), Usage: "PEM certificate chain of the HTTPS listener"},
		&cli.StringFlag{Name: FlagHTTPSPrivateKeyFile, EnvVars: env(FlagHTTPSPrivateKeyFile), Usage: "PEM private key of the HTTPS listener"},
		&cli.BoolFlag{Name: FlagWithUI, EnvVars: env(FlagWithUI), Usage: "serve the management UI at /"},
		&cli.BoolFlag{Name: FlagMCPEnabled, EnvVars: env(FlagMCPEnabled), Usage: "serve the Model Context Protocol at /mcp, behind the token, for AI agents"},
		&cli.BoolFlag{Name: FlagMCPAllowWrites, EnvVars: env(FlagMCPAllowWrites), Usage: "offer the MCP tools that write events and register schemas"},
		&cli.IntFlag{Name: FlagMCPMaxResults, EnvVars: env(FlagMCPMaxResults), Value: 1000, Usage: "events or rows of one MCP tool's answer (and at most 1 MiB); it says how to continue"},
		&cli.BoolFlag{Name: FlagOTelEnabled, EnvVars: env(FlagOTelEnabled), Value: true, Usage: "export OpenTelemetry traces when the OTEL_EXPORTER_OTLP_* variables name a collector; false turns them off whatever the environment says"},
		&cli.StringFlag{Name: FlagSigningKeyFile, EnvVars: env(FlagSigningKeyFile), Usage: "PKCS#8 PEM Ed25519 private key; events get signatures"},
		&cli.StringFlag{Name: FlagLogLevel, EnvVars: env(FlagLogLevel), Value: "info", Usage: "minimum log level: debug, info, warn or error"},
		&cli.DurationFlag{Name: FlagShutdownDrainPeriod, EnvVars: env(FlagShutdownDrainPeriod), Value: 0, Usage: "how long ping and health answer 503 before the listeners close"},
		&cli.DurationFlag{Name: FlagShutdownTimeout, EnvVars: env(FlagShutdownTimeout), Value: 30 * time.Second, Usage: "limit of the stop phase after the drain period"},
		&cli.StringFlag{Name: FlagMaxRequestSize, EnvVars: env(FlagMaxRequestSize), Value: "16MiB", Usage: "largest accepted request body (bytes, KiB, MiB, GiB)"},
		&cli.StringFlag{Name: FlagMaxEventSize, EnvVars: env(FlagMaxEventSize), Value: "1MiB", Usage: "largest canonical data of one event (bytes, KiB, MiB, GiB)"},
		&cli.StringFlag{Name: FlagEventQLMemoryLimit, EnvVars: env(FlagEventQLMemoryLimit), Value: "256MiB", Usage: "memory budget of one query's ORDER BY, GROUP BY and DISTINCT"},
		&cli.DurationFlag{Name: FlagEventQLPreconditionTimeout, EnvVars: env(FlagEventQLPreconditionTimeout), Value: 5 * time.Second, Usage: "time limit of one isEventQlQueryTrue precondition"},
		&cli.DurationFlag{Name: FlagEventQLQueryTimeout, EnvVars: env(FlagEventQLQueryTimeout), Value: 60 * time.Second, Usage: "time limit of one run-eventql-query; past it the stream ends with an error line"},
		&cli.StringFlag{Name: FlagMemoryLimit, EnvVars: env(FlagMemoryLimit), Usage: "memory the process may use (bytes, KiB, MiB, GiB); default: 90% of the cgroup memory limit when there is one, else none; GOMEMLIMIT wins"},
		&cli.IntFlag{Name: FlagMaxStreams, EnvVars: env(FlagMaxStreams), Value: 4096, Usage: "read, observe, subject, event-type, backup, verify-store and subscription streams open at once; more answer 503"},
		&cli.IntFlag{Name: FlagMaxQueries, EnvVars: env(FlagMaxQueries), Value: 8, Usage: "EventQL queries running at once (preconditions excluded); more answer 503"},
		&cli.IntFlag{Name: FlagMaxConnections, EnvVars: env(FlagMaxConnections), Usage: "open client connections on all listeners together; beyond them a new connection gets 503 (default: derived from the open-file limit, leaving room for storage files)"},
		&cli.DurationFlag{Name: FlagRequestBodyIdleTimeout, EnvVars: env(FlagRequestBodyIdleTimeout), Value: 30 * time.Second, Usage: "longest pause between bytes of a request body, restore included; then 408"},
		&cli.DurationFlag{Name: FlagRequestBodyTimeout, EnvVars: env(FlagRequestBodyTimeout), Value: 60 * time.Second, Usage: "longest time to receive a whole request body, restore excluded; then 408"},
		&cli.IntFlag{Name: FlagMaxEventSchemas, EnvVars: env(FlagMaxEventSchemas), Value: 10_000, Usage: "event schemas that may be registered; more answer 409"},
		&cli.IntFlag{Name: FlagMaxDataIndexes, EnvVars: env(FlagMaxDataIndexes), Value: store.DefaultMaxDataIndexes, Usage: "data indexes that may be registered; more answer 409"},
		&cli.IntFlag{Name: FlagMaxSubscriptions, EnvVars: env(FlagMaxSubscriptions), Value: subscriptions.DefaultMaxSubscriptions, Usage: "subscriptions that may exist; more answer 409"},
		&cli.DurationFlag{Name: FlagSubscriptionLeaseTimeout, EnvVars: env(FlagSubscriptionLeaseTimeout), Value: 10 * time.Second, Usage: "PostgreSQL mode: after this long without renewal a node's subscription leases pass to consumers on other nodes"},
		&cli.BoolFlag{Name: FlagReadOnly, EnvVars: env(FlagReadOnly), Usage: "start in read-only mode: writes and schema registrations answer 503"},
	}
}
