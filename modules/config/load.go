package config

import (
	"fmt"
	"time"
)

// The steps of Load, in its order: each reads or checks a group of flags,
// and the first error stops it.

// readFlags returns the configuration of the flags taken as they are given;
// the steps after it check them.
func readFlags(src Source) Config {
	return Config{
		DataDirectory:              src.String(FlagDataDirectory),
		DataDirectoryTemporary:     src.Bool(FlagDataDirectoryTemporary),
		HTTP:                       Listener{Enabled: src.Bool(FlagHTTPEnabled), Port: src.Int(FlagHTTPPort)},
		HTTPS:                      Listener{Enabled: src.Bool(FlagHTTPSEnabled), Port: src.Int(FlagHTTPSPort)},
		WithUI:                     src.Bool(FlagWithUI),
		MCP:                        MCP{Enabled: src.Bool(FlagMCPEnabled), AllowWrites: src.Bool(FlagMCPAllowWrites), MaxResults: src.Int(FlagMCPMaxResults)},
		OTelEnabled:                src.Bool(FlagOTelEnabled),
		ShutdownDrainPeriod:        src.Duration(FlagShutdownDrainPeriod),
		ShutdownTimeout:            src.Duration(FlagShutdownTimeout),
		EventQLPreconditionTimeout: src.Duration(FlagEventQLPreconditionTimeout),
		EventQLQueryTimeout:        src.Duration(FlagEventQLQueryTimeout),
		MaxStreams:                 src.Int(FlagMaxStreams),
		MaxQueries:                 src.Int(FlagMaxQueries),
		ReadOnly:                   src.Bool(FlagReadOnly),
		MaxConnections:             src.Int(FlagMaxConnections),
		RequestBodyIdleTimeout:     src.Duration(FlagRequestBodyIdleTimeout),
		RequestBodyTimeout:         src.Duration(FlagRequestBodyTimeout),
		MaxEventSchemas:            src.Int(FlagMaxEventSchemas),
		MaxDataIndexes:             src.Int(FlagMaxDataIndexes),
		MaxSubscriptions:           src.Int(FlagMaxSubscriptions),
		SubscriptionLeaseTimeout:   src.Duration(FlagSubscriptionLeaseTimeout),
	}
}

// loadAccess reads how clients authenticate: the token of --api-token or
// --api-token-file, or the access file of --access-file.
func (c *Config) loadAccess(src Source) error {
	c.APITokenFile, c.AccessFile = src.String(FlagAPITokenFile), src.String(FlagAccessFile)
	var err error
	c.APIToken, err = loadToken(src.String(FlagAPIToken), c.APITokenFile, c.AccessFile)
	return err
}

// loadListeners checks the listeners' ports, reads their addresses and,
// when HTTPS is enabled, loads its certificate.
func (c *Config) loadListeners(src Source) error {
	if err := c.checkListeners(); err != nil {
		return err
	}
	var err error
	if c.HTTP.Addresses, err = parseAddresses(FlagHTTPAddress, FlagHTTPPort, src.String(FlagHTTPAddress)); err != nil {
		return err
	}
	if c.HTTPS.Addresses, err = parseAddresses(FlagHTTPSAddress, FlagHTTPSPort, src.String(FlagHTTPSAddress)); err != nil {
		return err
	}
	if c.HTTPS.Enabled {
		if c.Certificate, err = loadCertificate(src.String(FlagHTTPSCertificateFile), src.String(FlagHTTPSPrivateKeyFile)); err != nil {
			return err
		}
	}
	return nil
}

// loadSigningKey reads the key of --signing-key-file, if it is set.
func (c *Config) loadSigningKey(src Source) error {
	path := src.String(FlagSigningKeyFile)
	if path == "" {
		return nil
	}
	var err error
	if c.SigningKey, err = LoadSigningKey(path); err != nil {
		return fmt.Errorf("--%s: %w", FlagSigningKeyFile, err)
	}
	return nil
}

// loadLogLevel reads --log-level.
func (c *Config) loadLogLevel(src Source) error {
	var err error
	c.LogLevel, err = parseLogLevel(src.String(FlagLogLevel))
	return err
}

// checkDurations checks that no duration flag is negative.
func (c *Config) checkDurations() error {
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{FlagShutdownDrainPeriod, c.ShutdownDrainPeriod},
		{FlagShutdownTimeout, c.ShutdownTimeout},
		{FlagEventQLPreconditionTimeout, c.EventQLPreconditionTimeout},
		{FlagEventQLQueryTimeout, c.EventQLQueryTimeout},
		{FlagRequestBodyIdleTimeout, c.RequestBodyIdleTimeout},
		{FlagRequestBodyTimeout, c.RequestBodyTimeout},
		{FlagSubscriptionLeaseTimeout, c.SubscriptionLeaseTimeout},
	} {
		if d.value < 0 {
			return fmt.Errorf("--%s must not be negative, got %s", d.flag, d.value)
		}
	}
	return nil
}

// loadSizes reads the size flags (request, event, EventQL memory limit);
// the EventQL memory limit must be at least 1KiB.
func (c *Config) loadSizes(src Source) error {
	for _, s := range []struct {
		flag string
		into *int64
	}{
		{FlagMaxRequestSize, &c.MaxRequestSize},
		{FlagMaxEventSize, &c.MaxEventSize},
		{FlagEventQLMemoryLimit, &c.EventQLMemoryLimit},
	} {
		var err error
		if *s.into, err = ParseSize(src.String(s.flag)); err != nil {
			return fmt.Errorf("--%s: %w", s.flag, err)
		}
	}
	if c.EventQLMemoryLimit < 1<<10 {
		return fmt.Errorf("--%s must be at least 1KiB, got %s", FlagEventQLMemoryLimit, src.String(FlagEventQLMemoryLimit))
	}
	return nil
}

// checkMinimums checks that the timeouts that cannot be off are greater
// than 0 and that the bounds of streams, queries, schemas and
// subscriptions are at least 1.
func (c *Config) checkMinimums() error {
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{FlagEventQLPreconditionTimeout, c.EventQLPreconditionTimeout},
		{FlagEventQLQueryTimeout, c.EventQLQueryTimeout},
		{FlagRequestBodyIdleTimeout, c.RequestBodyIdleTimeout},
		{FlagRequestBodyTimeout, c.RequestBodyTimeout},
		{FlagSubscriptionLeaseTimeout, c.SubscriptionLeaseTimeout},
	} {
		if d.value == 0 {
			return fmt.Errorf("--%s must be greater than 0", d.flag)
		}
	}
	for _, n := range []struct {
		flag  string
		value int
	}{{FlagMaxStreams, c.MaxStreams}, {FlagMaxQueries, c.MaxQueries}, {FlagMaxEventSchemas, c.MaxEventSchemas}, {FlagMaxDataIndexes, c.MaxDataIndexes}, {FlagMaxSubscriptions, c.MaxSubscriptions}, {FlagMCPMaxResults, c.MCP.MaxResults}} {
		if n.value < 1 {
			return fmt.Errorf("--%s must be at least 1, got %d", n.flag, n.value)
		}
	}
	return nil
}

// resolveLimits resolves the memory limit, raises and shares the open-file
// limit, and bounds the client connections: --max-connections, or by
// default (0) what the open files leave for them.
func (c *Config) resolveLimits(src Source) error {
	var err error
	if c.MemoryLimit, c.MemorySource, err = resolveMemoryLimit(src.String(FlagMemoryLimit), systemMemoryEnv()); err != nil {
		return err
	}
	if c.Files, err = resolveFileLimits(c.StorageBackend, c.PostgresMaxConnections, fileEnv{raise: raiseOpenFiles}); err != nil {
		return err
	}
	switch {
	case c.MaxConnections == 0:
		c.MaxConnections = c.Files.MaxConnections
	case c.MaxConnections < 0:
		return fmt.Errorf("--%s must be at least 1, got %d", FlagMaxConnections, c.MaxConnections)
	}
	return nil
}

// recordOptions keeps the effective value of every flag in Options, those
// of --max-connections and --memory-limit as resolved.
func (c *Config) recordOptions(src Source) {
	c.Options = effectiveOptions(src)
	c.Options[FlagMaxConnections] = c.MaxConnections
	c.Options[FlagMemoryLimit] = map[string]any{"bytes": c.MemoryLimit, "source": c.MemorySource}
}
