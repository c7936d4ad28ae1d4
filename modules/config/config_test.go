package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap/zapcore"
)

// load parses args (and the environment) with the real flag set and runs Load.
func load(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	var (
		cfg     Config
		loadErr error
	)
	app := &cli.App{
		Flags: Flags(),
		Action: func(c *cli.Context) error {
			cfg, loadErr = Load(c)
			return nil
		},
	}
	if err := app.Run(append([]string{"eventstore"}, args...)); err != nil {
		t.Fatalf("flag parsing of %q failed: %v", args, err)
	}
	return cfg, loadErr
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := load(t, "--api-token=secret", "--data-directory-temporary", "--http-enabled", "--https-enabled=false")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		APIToken:                   "secret",
		DataDirectoryTemporary:     true,
		HTTP:                       Listener{Enabled: true, Port: 3000},
		HTTPS:                      Listener{Enabled: false, Port: 4000},
		LogLevel:                   zapcore.InfoLevel,
		ShutdownTimeout:            30 * time.Second,
		MaxRequestSize:             16 << 20,
		MaxEventSize:               1 << 20,
		EventQLMemoryLimit:         256 << 20,
		EventQLPreconditionTimeout: 5 * time.Second,
	}
	if cfg.APIToken != want.APIToken || cfg.DataDirectoryTemporary != want.DataDirectoryTemporary ||
		!reflect.DeepEqual(cfg.HTTP, want.HTTP) || !reflect.DeepEqual(cfg.HTTPS, want.HTTPS) || cfg.LogLevel != want.LogLevel ||
		cfg.ShutdownTimeout != want.ShutdownTimeout || cfg.ShutdownDrainPeriod != 0 ||
		cfg.MaxRequestSize != want.MaxRequestSize || cfg.MaxEventSize != want.MaxEventSize ||
		cfg.EventQLMemoryLimit != want.EventQLMemoryLimit || cfg.EventQLPreconditionTimeout != want.EventQLPreconditionTimeout ||
		cfg.EventQLQueryTimeout != time.Minute || cfg.MaxStreams != 4096 || cfg.MaxQueries != 8 ||
		cfg.RequestBodyIdleTimeout != 30*time.Second || cfg.RequestBodyTimeout != time.Minute || cfg.MaxEventSchemas != 10_000 ||
		cfg.MaxConnections != cfg.Files.MaxConnections || cfg.MaxConnections < 16 || cfg.Files.Limit != cfg.Files.Hard ||
		cfg.WithUI || cfg.SigningKey != nil || cfg.Certificate != nil || cfg.StorageBackend != BackendPebble || cfg.PostgresURL != "" {
		t.Fatalf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestOptionsRedactSecrets(t *testing.T) {
	cfg, err := load(t, "--api-token=very-secret", "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--max-queries=3")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Options[FlagAPIToken] != Redacted || cfg.Options[FlagMaxQueries] != 3 || cfg.Options[FlagHTTPPort] != 3000 ||
		cfg.Options[FlagShutdownTimeout] != "30s" || cfg.Options[FlagLogLevel] != "info" {
		t.Fatalf("options %v", cfg.Options)
	}
	if len(cfg.Options) != len(Flags()) {
		t.Fatalf("%d options for %d flags", len(cfg.Options), len(Flags()))
	}
	for name, v := range cfg.Options {
		if s, ok := v.(string); ok && s == "very-secret" {
			t.Fatalf("option %s shows the token", name)
		}
	}
}

func TestLoadFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("  file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVENTSTORE_API_TOKEN_FILE", tokenFile)
	t.Setenv("EVENTSTORE_DATA_DIRECTORY", dir)
	t.Setenv("EVENTSTORE_HTTP_ENABLED", "1")
	t.Setenv("EVENTSTORE_HTTPS_ENABLED", "f")
	t.Setenv("EVENTSTORE_HTTP_PORT", "8080")
	t.Setenv("EVENTSTORE_SHUTDOWN_DRAIN_PERIOD", "1m30s")
	t.Setenv("EVENTSTORE_MAX_REQUEST_SIZE", "512KiB")
	t.Setenv("EVENTSTORE_LOG_LEVEL", "debug")

	cfg, err := load(t, "--http-port", "9090") // the command line wins over the environment
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.APIToken != "file-token" {
		t.Errorf("token from file: got %q, want %q (whitespace trimmed)", cfg.APIToken, "file-token")
	}
	if cfg.DataDirectory != dir || !cfg.HTTP.Enabled || cfg.HTTPS.Enabled || cfg.HTTP.Port != 9090 {
		t.Errorf("got data %q http %+v https %+v", cfg.DataDirectory, cfg.HTTP, cfg.HTTPS)
	}
	if cfg.ShutdownDrainPeriod != 90*time.Second || cfg.MaxRequestSize != 512<<10 || cfg.LogLevel != zapcore.DebugLevel {
		t.Errorf("got drain %s, max request %d, level %s", cfg.ShutdownDrainPeriod, cfg.MaxRequestSize, cfg.LogLevel)
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte(" \n\t"), 0o600); err != nil {
		t.Fatal(err)
	}
	rsaLike := filepath.Join(dir, "ecdsa.pem")
	writeECDSAKey(t, rsaLike)
	base := []string{"--data-directory-temporary", "--http-enabled", "--https-enabled=false"}
	withToken := append([]string{"--api-token=secret"}, base...)
	pgBase := []string{"--api-token=secret", "--http-enabled", "--https-enabled=false"}
	const pgURL = "postgres://app:s3cret@db:5432/events"

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no token", base, "an API token is required"},
		{"empty token", append([]string{"--api-token= "}, base...), "an API token is required"},
		{"both tokens", append([]string{"--api-token=a", "--api-token-file=" + emptyFile}, base...), "cannot be combined"},
		{"empty token file", append([]string{"--api-token-file=" + emptyFile}, base...), "holds no token"},
		{"missing token file", append([]string{"--api-token-file=" + filepath.Join(dir, "nope")}, base...), "no such file"},
		{"no data directory", []string{"--api-token=a", "--http-enabled", "--https-enabled=false"}, "a data directory is required"},
		{"both data directories", append([]string{"--data-directory=" + dir}, withToken...), "cannot be combined"},
		{"no listener", []string{"--api-token=a", "--data-directory-temporary", "--https-enabled=false"}, "no listener enabled"},
		{"https without certificate", []string{"--api-token=a", "--data-directory-temporary"}, "--https-certificate-file is required when HTTPS is enabled (disable HTTPS with --https-enabled=false)"},
		{"port out of range", append([]string{"--http-port=70000"}, withToken...), "--http-port must be a port"},
		{"equal ports", []string{"--api-token=a", "--data-directory-temporary", "--http-enabled", "--http-port=4000", "--https-certificate-file=x", "--https-private-key-file=y"}, "must differ"},
		{"bad log level", append([]string{"--log-level=loud"}, withToken...), "--log-level must be"},
		{"negative drain", append([]string{"--shutdown-drain-period=-1s"}, withToken...), "--shutdown-drain-period must not be negative"},
		{"bad size", append([]string{"--max-request-size=16MB"}, withToken...), "--max-request-size: invalid size"},
		{"zero size", append([]string{"--max-event-size=0"}, withToken...), "--max-event-size: invalid size"},
		{"tiny query memory", append([]string{"--eventql-memory-limit=1000"}, withToken...), "--eventql-memory-limit must be at least 1KiB, got 1000"},
		{"zero precondition timeout", append([]string{"--eventql-precondition-timeout=0s"}, withToken...), "--eventql-precondition-timeout must be greater than 0"},
		{"negative precondition timeout", append([]string{"--eventql-precondition-timeout=-1s"}, withToken...), "--eventql-precondition-timeout must not be negative"},
		{"zero query timeout", append([]string{"--eventql-query-timeout=0s"}, withToken...), "--eventql-query-timeout must be greater than 0"},
		{"no streams", append([]string{"--max-streams=0"}, withToken...), "--max-streams must be at least 1, got 0"},
		{"negative queries", append([]string{"--max-queries=-2"}, withToken...), "--max-queries must be at least 1, got -2"},
		{"negative connections", append([]string{"--max-connections=-1"}, withToken...), "--max-connections must be at least 1, got -1"},
		{"no schemas", append([]string{"--max-event-schemas=0"}, withToken...), "--max-event-schemas must be at least 1, got 0"},
		{"zero body idle timeout", append([]string{"--request-body-idle-timeout=0s"}, withToken...), "--request-body-idle-timeout must be greater than 0"},
		{"negative body timeout", append([]string{"--request-body-timeout=-1s"}, withToken...), "--request-body-timeout must not be negative"},
		{"bad memory limit", append([]string{"--memory-limit=lots"}, withToken...), "--memory-limit: invalid size"},
		{"tiny memory limit", append([]string{"--memory-limit=1MiB"}, withToken...), "--memory-limit must be at least 64MiB, got 1MiB"},
		{"wrong signing key type", append([]string{"--signing-key-file=" + rsaLike}, withToken...), "an Ed25519 key is required"},
		{"signing key not PEM", append([]string{"--signing-key-file=" + emptyFile}, withToken...), "no PEM"},
		{"unknown backend", append([]string{"--storage-backend=mysql"}, withToken...), `--storage-backend must be pebble or postgres, got "mysql"`},
		{"URL with pebble", append([]string{"--postgres-url=" + pgURL}, withToken...), "--postgres-url needs --storage-backend postgres"},
		{"URL file with pebble", append([]string{"--postgres-url-file=" + emptyFile}, withToken...), "--postgres-url-file needs --storage-backend postgres"},
		{"postgres with a data directory", append([]string{"--storage-backend=postgres", "--postgres-url=" + pgURL}, withToken...), "--data-directory-temporary cannot be used with --storage-backend postgres"},
		{"postgres with a data directory path", append([]string{"--storage-backend=postgres", "--postgres-url=" + pgURL, "--data-directory=" + dir}, pgBase...), "--data-directory cannot be used with --storage-backend postgres"},
		{"postgres without URL", append([]string{"--storage-backend=postgres"}, pgBase...), "--storage-backend postgres needs --postgres-url or --postgres-url-file"},
		{"both URLs", append([]string{"--storage-backend=postgres", "--postgres-url=" + pgURL, "--postgres-url-file=" + emptyFile}, pgBase...), "cannot be combined"},
		{"empty URL file", append([]string{"--storage-backend=postgres", "--postgres-url-file=" + emptyFile}, pgBase...), "holds no URL"},
		{"malformed URL", append([]string{"--storage-backend=postgres", "--postgres-url=postgres://app:s3cret@db:port/events"}, pgBase...), "--postgres-url: the PostgreSQL URL is not a valid connection string (the value is not shown"},
		{"one connection", append([]string{"--storage-backend=postgres", "--postgres-url=" + pgURL, "--postgres-max-connections=1"}, pgBase...), "--postgres-max-connections must be at least 2, got 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load(%q): got error %v, want one containing %q", tc.args, err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error shows the password: %q", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error must be one line, got %q", err)
			}
		})
	}
}

func TestLoadPostgres(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(file, []byte("  postgres://app:s3cret@db1,db2/events?target_session_attrs=read-write\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVENTSTORE_STORAGE_BACKEND", "postgres")
	cfg, err := load(t, "--api-token=a", "--http-enabled", "--https-enabled=false", "--postgres-url-file="+file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StorageBackend != BackendPostgres || cfg.PostgresURL != "postgres://app:s3cret@db1,db2/events?target_session_attrs=read-write" ||
		cfg.PostgresMaxConnections != 16 || cfg.DataDirectory != "" || cfg.DataDirectoryTemporary {
		t.Fatalf("postgres mode: %+v", cfg)
	}
	cfg, err = load(t, "--api-token=a", "--http-enabled", "--https-enabled=false", "--postgres-url=postgres://db/events", "--postgres-max-connections=4")
	if err != nil || cfg.PostgresURL != "postgres://db/events" || cfg.PostgresMaxConnections != 4 {
		t.Fatalf("postgres mode from --postgres-url: %+v %v", cfg, err)
	}
}

func TestLoadSigningKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	// The test vector of docs/api.md §2.7: seed bytes 0x00..0x1f.
	pemText := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n-----END PRIVATE KEY-----\n"
	if err := os.WriteFile(path, []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := LoadSigningKey(path)
	if err != nil {
		t.Fatalf("LoadSigningKey: %v", err)
	}
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	if !key.Equal(ed25519.NewKeyFromSeed(seed)) {
		t.Fatalf("loaded key differs from the seed 0x00..0x1f")
	}
}

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true}, {"1048576", 1 << 20, true}, {"512KiB", 512 << 10, true}, {"16MiB", 16 << 20, true},
		{"2GiB", 2 << 30, true}, {"", 0, false}, {"0", 0, false}, {"-1", 0, false}, {"+5", 0, false},
		{"1.5MiB", 0, false}, {"16MB", 0, false}, {"16 MiB", 0, false}, {"MiB", 0, false},
		{"9999999999999GiB", 0, false},
	}
	for _, tc := range cases {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if tc.ok && FormatSize(got) != tc.in && tc.in != "1048576" {
			t.Errorf("FormatSize(%d) = %q, want %q", got, FormatSize(got), tc.in)
		}
	}
	if FormatSize(1<<20) != "1MiB" || FormatSize(1000) != "1000" {
		t.Errorf("FormatSize: got %q and %q", FormatSize(1<<20), FormatSize(1000))
	}
}

func TestEnvVar(t *testing.T) {
	if got := EnvVar(FlagHTTPSCertificateFile); got != "EVENTSTORE_HTTPS_CERTIFICATE_FILE" {
		t.Fatalf("EnvVar: got %q", got)
	}
}

func writeECDSAKey(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
