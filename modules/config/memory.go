package config

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// cgroupShare is the part of a cgroup memory limit the process plans to use
// when no limit is given: the rest is headroom for what no budget sees
// (thread stacks, the binary, the kernel's page tables).
const cgroupShare = 0.9

// Memory sources: where the memory limit came from.
const (
	MemoryFromFlag       = "flag"
	MemoryFromGOMEMLIMIT = "GOMEMLIMIT"
	MemoryFromCgroup     = "cgroup"
	MemoryUnlimited      = "none"
)

// memoryEnv is what resolveMemoryLimit reads of the environment.
type memoryEnv struct {
	// goMemLimit is the GOMEMLIMIT variable, and the limit the Go runtime
	// took from it.
	goMemLimit string
	current    int64
	// cgroup returns the cgroup's memory limit; an error when there is none.
	cgroup func() (uint64, error)
}

// resolveMemoryLimit returns the memory limit in bytes (0 for none) and its
// source: GOMEMLIMIT wins, then the flag, then 90% of the cgroup limit.
func resolveMemoryLimit(flag string, env memoryEnv) (int64, string, error) {
	switch {
	case env.goMemLimit != "":
		return env.current, MemoryFromGOMEMLIMIT, nil
	case flag != "":
		n, err := ParseSize(flag)
		if err != nil {
			return 0, "", fmt.Errorf("--%s: %w", FlagMemoryLimit, err)
		}
		if n < MinMemoryLimit {
			return 0, "", fmt.Errorf("--%s must be at least %s, got %s", FlagMemoryLimit, FormatSize(MinMemoryLimit), flag)
		}
		return n, MemoryFromFlag, nil
	}
	// No cgroup, an unreadable one, or one without a limit: no limit.
	limit, err := env.cgroup()
	if err != nil || limit == 0 || limit >= 1<<62 {
		return 0, MemoryUnlimited, nil
	}
	return int64(float64(limit) * cgroupShare), MemoryFromCgroup, nil
}

// systemMemoryEnv reads the memory environment of this process.
func systemMemoryEnv() memoryEnv {
	return memoryEnv{goMemLimit: os.Getenv("GOMEMLIMIT"), current: debug.SetMemoryLimit(-1), cgroup: memlimit.FromCgroup}
}

// MinMemoryLimit is the smallest --memory-limit: below it the storage
// engine's caches and a few requests do not fit.
const MinMemoryLimit = 64 << 20
