package opsapi

import (
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/pbnjay/memory"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// DiagnosticsPath is the path of the diagnostics report.
const DiagnosticsPath = "/api/v1/diagnostics"

// Diagnostics assembles the report of GET /api/v1/diagnostics: what runs
// (version), where (system), how (process, effective options, secrets
// redacted) and on what (storage). Tools must rely on the top-level keys
// only; the rest may grow.
type Diagnostics struct {
	cfg     config.Config
	build   config.Build
	store   *store.Store
	started time.Time
}

// NewDiagnostics returns the diagnostics of the service started now.
func NewDiagnostics(cfg config.Config, build config.Build, s *store.Store) *Diagnostics {
	return &Diagnostics{cfg: cfg, build: build, store: s, started: time.Now()}
}

// Report returns the report.
func (d *Diagnostics) Report() map[string]any {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	system := map[string]any{
		"os":                runtime.GOOS,
		"architecture":      runtime.GOARCH,
		"cpus":              runtime.NumCPU(),
		"memoryBytes":       memory.TotalMemory(),
		"cgroupMemoryLimit": nil,
		"hostname":          hostname(),
	}
	if limit, err := memlimit.FromCgroup(); err == nil && limit < 1<<62 {
		system["cgroupMemoryLimit"] = limit
	}
	return map[string]any{
		"version": map[string]any{"version": d.build.Version, "revision": d.build.Revision, "goVersion": d.build.GoVersion},
		"system":  system,
		"process": map[string]any{
			"pid":              os.Getpid(),
			"uptimeSeconds":    time.Since(d.started).Seconds(),
			"goroutines":       runtime.NumGoroutine(),
			"gomaxprocs":       runtime.GOMAXPROCS(0),
			"heapInUseBytes":   ms.HeapInuse,
			"heapAllocBytes":   ms.HeapAlloc,
			"sysBytes":         ms.Sys,
			"gcCycles":         ms.NumGC,
			"gcPercent":        runtimeValue("/gc/gogc:percent"),
			"memoryLimitBytes": runtimeValue("/gc/gomemlimit:bytes"),
		},
		"options": d.cfg.Options,
		"storage": d.store.Describe(),
	}
}

// runtimeValue reads one of the Go runtime's uint64 metrics.
func runtimeValue(name string) uint64 {
	sample := []metrics.Sample{{Name: name}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// NewDiagnosticsRoute returns GET /api/v1/diagnostics.
func NewDiagnosticsRoute(d *Diagnostics) httpkit.Route {
	return httpkit.Route{Method: http.MethodGet, Path: DiagnosticsPath, Permission: httpkit.PermitOperate, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpkit.WriteJSON(w, d.Report())
	})}
}
