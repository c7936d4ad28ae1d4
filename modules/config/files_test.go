package config

import (
	"errors"
	"strings"
	"testing"
)

func TestResolveFileLimits(t *testing.T) {
	limits := func(limit, hard uint64) fileEnv {
		return fileEnv{raise: func() (uint64, uint64, error) { return limit, hard, nil }}
	}
	cases := []struct {
		name        string
		backend     string
		pool        int
		env         fileEnv
		storage     int
		connections int
	}{
		// Pebble: its own default of table files, the rest minus 16 of its own, 64 others and the reserve.
		{"pebble, a generous limit", BackendPebble, 0, limits(1<<20, 1<<20), 1000, 1<<20 - 1016 - 64 - 32},
		{"pebble, 20,000", BackendPebble, 0, limits(20_000, 20_000), 1000, 20_000 - 1016 - 96},
		// With 1,024 files Pebble keeps a quarter of them.
		{"pebble, 1,024", BackendPebble, 0, limits(1024, 1024), 256, 1024 - 272 - 96},
		{"postgres: the pool, LISTEN and the probe", BackendPostgres, 16, limits(1024, 1024), 0, 1024 - 18 - 96},
		{"an unlimited limit", BackendPebble, 0, limits(^uint64(0), ^uint64(0)), 1000, 1<<30 - 1016 - 96},
	}
	for _, tc := range cases {
		f, err := resolveFileLimits(tc.backend, tc.pool, tc.env)
		if err != nil || f.StorageFiles != tc.storage || f.MaxConnections != tc.connections {
			t.Errorf("%s: storage %d, connections %d (%v), want %d, %d", tc.name, f.StorageFiles, f.MaxConnections, err, tc.storage, tc.connections)
		}
	}
	if _, err := resolveFileLimits(BackendPebble, 0, limits(128, 128)); err == nil || !strings.Contains(err.Error(), "leaves no room for client connections") {
		t.Errorf("128 files: %v", err)
	}
	failing := fileEnv{raise: func() (uint64, uint64, error) { return 0, 0, errors.New("EPERM") }}
	if _, err := resolveFileLimits(BackendPebble, 0, failing); err == nil {
		t.Error("an unreadable limit was accepted")
	}
}
