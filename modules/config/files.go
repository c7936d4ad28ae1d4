package config

import (
	"fmt"
	"syscall"
)

// ConnectionReserve is how many connections beyond --max-connections are
// accepted for ping and health alone, so that probes keep working while
// the limit is reached.
const ConnectionReserve = 32

// Descriptors the process keeps apart from client connections and storage
// files: the listeners, logs, the lock file, the runtime's own.
const otherFiles = 64

// MaxPebbleFiles is the most table files Pebble keeps open (its own
// default); with a low open-file limit it gets a quarter of it.
const MaxPebbleFiles = 1000

// FileLimits is the open-file limit of the process and how it is shared.
type FileLimits struct {
	// Limit is the process's open-file limit (RLIMIT_NOFILE) after raising
	// it to the hard limit; Hard is that hard limit.
	Limit, Hard uint64
	// StorageFiles is how many files Pebble may keep open (0 with
	// PostgreSQL).
	StorageFiles int
	// MaxConnections is the derived default of --max-connections.
	MaxConnections int
}

// fileEnv is what resolveFileLimits reads of the process.
type fileEnv struct {
	// raise raises the open-file limit to the hard limit and returns both.
	raise func() (limit, hard uint64, err error)
}

// resolveFileLimits raises the open-file limit and shares it: Pebble's
// table files (up to MaxPebbleFiles, at most a quarter of the limit) or
// the PostgreSQL pool, the other files of the process, the connection
// reserve of the probes, and the client connections, which get the rest.
func resolveFileLimits(backend string, pgConnections int, env fileEnv) (FileLimits, error) {
	limit, hard, err := env.raise()
	if err != nil {
		return FileLimits{}, fmt.Errorf("read the open-file limit: %w", err)
	}
	f := FileLimits{Limit: limit, Hard: hard}
	limit = min(limit, 1<<30)    // unlimited counts as plenty
	storage := pgConnections + 2 // the pool, the LISTEN and the probe connection
	if backend == BackendPebble {
		f.StorageFiles = int(min(MaxPebbleFiles, limit/4))
		storage = f.StorageFiles + 16 // the WAL, the manifest, the directory
	}
	free := int64(limit) - int64(storage) - otherFiles - ConnectionReserve
	if free < 16 {
		return FileLimits{}, fmt.Errorf("the open-file limit %d leaves no room for client connections (raise it with ulimit -n)", limit)
	}
	f.MaxConnections = int(free)
	return f, nil
}

// raiseOpenFiles raises the soft open-file limit of the process to its hard
// limit and returns both.
func raiseOpenFiles() (uint64, uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max {
		raised := syscall.Rlimit{Cur: rl.Max, Max: rl.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			rl = raised
		}
	}
	return rl.Cur, rl.Max, nil
}
