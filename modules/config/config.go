package config

import (
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// Build describes the running binary.
type Build struct {
	// Version is the release version, "dev" for untagged builds.
	Version string
	// Revision is the source control revision, "unknown" when not recorded.
	Revision string
	// GoVersion is the version of the Go toolchain that built the binary.
	GoVersion string
}

// Listener configures one network listener.
type Listener struct {
	// Enabled tells whether the listener is opened at all.
	Enabled bool
	// Port is the TCP port; 0 picks a free port, shared by all Addresses.
	Port int
	// Addresses are the IP addresses (without brackets) and host names the
	// listener binds to; none means all interfaces.
	Addresses []string
}

// Config is the validated configuration of `eventstore run`.
type Config struct {
	// APIToken is the bearer token clients must present (--api-token), or
	// the tokens of --api-token-file, one per line. Never log it.
	APIToken string
	// APITokenFile is the file APIToken was read from, if any: the auth
	// module reads it again when it changes.
	APITokenFile string
	// AccessFile is the access file of named tokens with grants
	// (--access-file), the alternative to APIToken; the auth module reads
	// it.
	AccessFile string
	// StorageBackend is BackendPebble or BackendPostgres.
	StorageBackend string
	// PostgresURL is the connection URL of BackendPostgres. It holds a
	// password: never log it (pgstore.Describe gives hosts and database).
	PostgresURL string
	// PostgresMaxConnections is the pool size of BackendPostgres.
	PostgresMaxConnections int
	// DataDirectory is the persistent data directory of BackendPebble;
	// empty when Temporary.
	DataDirectory string
	// DataDirectoryTemporary selects a new temporary directory removed on
	// shutdown (BackendPebble).
	DataDirectoryTemporary bool
	// HTTP is the plain HTTP listener.
	HTTP Listener
	// HTTPS is the TLS listener; Certificate is set when it is enabled.
	HTTPS Listener
	// Certificate is the loaded HTTPS certificate chain and key.
	Certificate *tls.Certificate
	// WithUI enables the management UI at /.
	WithUI bool
	// MCP is the Model Context Protocol endpoint at /mcp.
	MCP MCP
	// OTelEnabled (--otel-enabled) allows traces; the OTEL_* variables
	// decide whether and where they are exported.
	OTelEnabled bool
	// SigningKey signs emitted events when set.
	SigningKey ed25519.PrivateKey
	// LogLevel is the minimum level written to the log.
	LogLevel zapcore.Level
	// ShutdownDrainPeriod is how long ping and health answer 503 before the listeners close.
	ShutdownDrainPeriod time.Duration
	// ShutdownTimeout limits the stop phase that follows the drain period.
	ShutdownTimeout time.Duration
	// MaxRequestSize is the largest accepted request body in bytes.
	MaxRequestSize int64
	// MaxEventSize is the largest canonical data of one event in bytes.
	MaxEventSize int64
	// EventQLMemoryLimit is the memory budget of one query's blocking operators in bytes.
	EventQLMemoryLimit int64
	// EventQLPreconditionTimeout limits the evaluation of one isEventQlQueryTrue precondition.
	EventQLPreconditionTimeout time.Duration
	// EventQLQueryTimeout limits one run-eventql-query.
	EventQLQueryTimeout time.Duration
	// MemoryLimit is the memory the process may use in bytes, 0 for no limit;
	// MemorySource tells where it came from (MemoryFrom…, MemoryUnlimited).
	MemoryLimit  int64
	MemorySource string
	// MaxStreams bounds the open read, observe, subject, event-type and
	// verify-store streams.
	MaxStreams int
	// MaxQueries bounds the EventQL queries running at once.
	MaxQueries int
	// ReadOnly starts the service in read-only mode.
	ReadOnly bool
	// Files is the open-file limit and how it is shared.
	Files FileLimits
	// MaxConnections bounds the open client connections on all listeners
	// (ConnectionReserve more are accepted for ping and health alone).
	MaxConnections int
	// RequestBodyIdleTimeout is the longest pause between bytes of a
	// request body; RequestBodyTimeout the longest time to receive a whole
	// body (restore excluded).
	RequestBodyIdleTimeout, RequestBodyTimeout time.Duration
	// MaxEventSchemas bounds the registered event schemas.
	MaxEventSchemas int
	// MaxDataIndexes bounds the registered data indexes.
	MaxDataIndexes int
	// MaxSubscriptions bounds the subscriptions that may exist.
	MaxSubscriptions int
	// SubscriptionLeaseTimeout is how long a node's partition leases last
	// without renewal (PostgreSQL mode).
	SubscriptionLeaseTimeout time.Duration
	// Options are the effective values of every flag, given or by default,
	// by flag name, secrets redacted (for diagnostics).
	Options map[string]any
}

// Source is what Load reads flag values from; *cli.Context satisfies it.
type Source interface {
	String(name string) string
	Bool(name string) bool
	Int(name string) int
	Duration(name string) time.Duration
}

// Load reads and validates the flags of `eventstore run`. Its error is one
// line naming the offending flag, suitable for a usage error.
func Load(src Source) (Config, error) {
	cfg := readFlags(src)
	if err := cfg.loadAccess(src); err != nil {
		return Config{}, err
	}
	if err := cfg.loadStorage(src); err != nil {
		return Config{}, err
	}
	if err := cfg.loadListeners(src); err != nil {
		return Config{}, err
	}
	if err := cfg.loadSigningKey(src); err != nil {
		return Config{}, err
	}
	if err := cfg.loadLogLevel(src); err != nil {
		return Config{}, err
	}
	if err := cfg.checkDurations(); err != nil {
		return Config{}, err
	}
	if err := cfg.loadSizes(src); err != nil {
		return Config{}, err
	}
	if err := cfg.checkMinimums(); err != nil {
		return Config{}, err
	}
	if err := cfg.resolveLimits(src); err != nil {
		return Config{}, err
	}
	cfg.recordOptions(src)
	return cfg, nil
}

// loadToken returns the token of --api-token, or the content of
// --api-token-file (whitespace-trimmed; it may hold several tokens, one
// per line), or "" with --access-file: exactly one of the three is set.
func loadToken(token, file, access string) (string, error) {
	set := 0
	for _, v := range []string{token, file, access} {
		if v != "" {
			set++
		}
	}
	switch {
	case set > 1:
		return "", fmt.Errorf("--%s, --%s and --%s cannot be combined, use one of them", FlagAPIToken, FlagAPITokenFile, FlagAccessFile)
	case access != "":
		return "", nil
	case file != "":
		raw, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", FlagAPITokenFile, err)
		}
		token = strings.TrimSpace(string(raw))
		if token == "" {
			return "", fmt.Errorf("--%s: the file %s holds no token", FlagAPITokenFile, file)
		}
		return token, nil
	case strings.TrimSpace(token) != "":
		return token, nil
	default:
		return "", fmt.Errorf("an API token is required: set --%s, --%s or --%s", FlagAPIToken, FlagAPITokenFile, FlagAccessFile)
	}
}

func (c *Config) checkDataDirectory() error {
	switch {
	case c.DataDirectory != "" && c.DataDirectoryTemporary:
		return fmt.Errorf("--%s and --%s cannot be combined, use one of them", FlagDataDirectory, FlagDataDirectoryTemporary)
	case c.DataDirectory == "" && !c.DataDirectoryTemporary:
		return fmt.Errorf("a data directory is required: set --%s or --%s", FlagDataDirectory, FlagDataDirectoryTemporary)
	}
	return nil
}

func (c *Config) checkListeners() error {
	if !c.HTTP.Enabled && !c.HTTPS.Enabled {
		return fmt.Errorf("no listener enabled: set --%s or keep --%s", FlagHTTPEnabled, FlagHTTPSEnabled)
	}
	for _, p := range []struct {
		flag string
		port int
	}{{FlagHTTPPort, c.HTTP.Port}, {FlagHTTPSPort, c.HTTPS.Port}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("--%s must be a port between 1 and 65535 (or 0 for a free port), got %d", p.flag, p.port)
		}
	}
	if c.HTTP.Enabled && c.HTTPS.Enabled && c.HTTP.Port == c.HTTPS.Port && c.HTTP.Port != 0 {
		return fmt.Errorf("--%s and --%s must differ, both are %d", FlagHTTPPort, FlagHTTPSPort, c.HTTP.Port)
	}
	return nil
}

func loadCertificate(certFile, keyFile string) (*tls.Certificate, error) {
	hint := fmt.Sprintf("(disable HTTPS with --%s=false)", FlagHTTPSEnabled)
	if certFile == "" {
		return nil, fmt.Errorf("--%s is required when HTTPS is enabled %s", FlagHTTPSCertificateFile, hint)
	}
	if keyFile == "" {
		return nil, fmt.Errorf("--%s is required when HTTPS is enabled %s", FlagHTTPSPrivateKeyFile, hint)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--%s/--%s: %w", FlagHTTPSCertificateFile, FlagHTTPSPrivateKeyFile, err)
	}
	return &cert, nil
}

// LoadSigningKey reads a PKCS#8 PEM file holding an Ed25519 private key.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s holds no PEM \"PRIVATE KEY\" block", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ed, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, an Ed25519 key is required", path, key)
	}
	return ed, nil
}

func parseLogLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, errors.New("--" + FlagLogLevel + " must be debug, info, warn or error, got \"" + s + "\"")
}

// MCP configures the Model Context Protocol endpoint (docs/api.md §4.17).
type MCP struct {
	// Enabled (--mcp-enabled) serves /mcp.
	Enabled bool
	// AllowWrites (--mcp-allow-writes) adds the tools that write events
	// and register schemas.
	AllowWrites bool
	// MaxResults (--mcp-max-results) bounds the events or rows of one
	// tool's answer.
	MaxResults int
}
