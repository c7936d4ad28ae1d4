package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/eventstore-service/eventstore/modules/store/pgstore"
)

// Storage backends of --storage-backend.
const (
	BackendPebble   = "pebble"
	BackendPostgres = "postgres"
)

// loadStorage reads the storage flags: Pebble needs a data directory flag
// and takes no PostgreSQL URL; PostgreSQL needs exactly one URL flag and
// takes no data directory flag.
func (c *Config) loadStorage(src Source) error {
	c.StorageBackend = src.String(FlagStorageBackend)
	url, file := src.String(FlagPostgresURL), src.String(FlagPostgresURLFile)
	switch c.StorageBackend {
	case BackendPebble:
		for _, f := range []struct{ flag, value string }{{FlagPostgresURL, url}, {FlagPostgresURLFile, file}} {
			if f.value != "" {
				return fmt.Errorf("--%s needs --%s %s", f.flag, FlagStorageBackend, BackendPostgres)
			}
		}
		return c.checkDataDirectory()
	case BackendPostgres:
	default:
		return fmt.Errorf("--%s must be %s or %s, got %q", FlagStorageBackend, BackendPebble, BackendPostgres, c.StorageBackend)
	}
	for _, f := range []struct {
		flag string
		set  bool
	}{{FlagDataDirectory, c.DataDirectory != ""}, {FlagDataDirectoryTemporary, c.DataDirectoryTemporary}} {
		if f.set {
			return fmt.Errorf("--%s cannot be used with --%s %s, which keeps no data directory", f.flag, FlagStorageBackend, BackendPostgres)
		}
	}
	if url == "" && file == "" {
		return fmt.Errorf("--%s %s needs --%s or --%s", FlagStorageBackend, BackendPostgres, FlagPostgresURL, FlagPostgresURLFile)
	}
	var err error
	if c.PostgresURL, err = LoadPostgresURL(url, file); err != nil {
		return err
	}
	c.PostgresMaxConnections = src.Int(FlagPostgresMaxConnections)
	if c.PostgresMaxConnections < 2 {
		return fmt.Errorf("--%s must be at least 2, got %d", FlagPostgresMaxConnections, c.PostgresMaxConnections)
	}
	return nil
}

// LoadPostgresURL returns the URL of --postgres-url or, read from the
// file, of --postgres-url-file: exactly one of them must be set. Its errors
// never quote the URL, which may hold a password.
func LoadPostgresURL(url, file string) (string, error) {
	flag := FlagPostgresURL
	switch {
	case url != "" && file != "":
		return "", fmt.Errorf("--%s and --%s cannot be combined, use one of them", FlagPostgresURL, FlagPostgresURLFile)
	case file != "":
		raw, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", FlagPostgresURLFile, err)
		}
		if url, flag = strings.TrimSpace(string(raw)), FlagPostgresURLFile; url == "" {
			return "", fmt.Errorf("--%s: the file %s holds no URL", FlagPostgresURLFile, file)
		}
	case strings.TrimSpace(url) == "":
		return "", fmt.Errorf("set --%s or --%s", FlagPostgresURL, FlagPostgresURLFile)
	}
	if err := pgstore.CheckURL(url); err != nil {
		return "", fmt.Errorf("--%s: %v (the value is not shown: it may hold a password)", flag, err)
	}
	return url, nil
}
