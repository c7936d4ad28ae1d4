package config

import (
	"errors"
	"testing"
)

func TestResolveMemoryLimit(t *testing.T) {
	cgroup := func(limit uint64, err error) func() (uint64, error) {
		return func() (uint64, error) { return limit, err }
	}
	cases := []struct {
		name   string
		flag   string
		env    memoryEnv
		limit  int64
		source string
	}{
		{"GOMEMLIMIT wins over the flag", "1GiB", memoryEnv{goMemLimit: "700MiB", current: 700 << 20, cgroup: cgroup(2<<30, nil)}, 700 << 20, MemoryFromGOMEMLIMIT},
		{"the flag wins over the cgroup", "1GiB", memoryEnv{cgroup: cgroup(2<<30, nil)}, 1 << 30, MemoryFromFlag},
		{"90% of the cgroup limit", "", memoryEnv{cgroup: cgroup(1<<30, nil)}, 966367641, MemoryFromCgroup},
		{"a cgroup without a limit", "", memoryEnv{cgroup: cgroup(9223372036854771712, nil)}, 0, MemoryUnlimited},
		{"no cgroup", "", memoryEnv{cgroup: cgroup(0, errors.New("process is not in cgroup"))}, 0, MemoryUnlimited},
	}
	for _, tc := range cases {
		limit, source, err := resolveMemoryLimit(tc.flag, tc.env)
		if err != nil || limit != tc.limit || source != tc.source {
			t.Errorf("%s: %d %s %v, want %d %s", tc.name, limit, source, err, tc.limit, tc.source)
		}
	}
}
