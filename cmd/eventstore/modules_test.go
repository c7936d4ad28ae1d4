package main

import (
	"slices"
	"sync"
	"testing"

	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/config"
	"github.com/eventstore-service/eventstore/modules/lifecycle"
	"github.com/eventstore-service/eventstore/modules/tracing"
)

// phaseLog records the phase of the process after each start and each stop
// hook, in the order fx runs them.
type phaseLog struct {
	mu            sync.Mutex
	state         *lifecycle.State
	starts, stops []lifecycle.Phase
}

func (l *phaseLog) LogEvent(e fxevent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.(type) {
	case *fxevent.OnStartExecuted:
		l.starts = append(l.starts, l.state.Phase())
	case *fxevent.OnStopExecuted:
		l.stops = append(l.stops, l.state.Phase())
	}
}

// TestStartOrderDoesNotDependOnTheList starts and stops the service's
// modules as listed and in reverse: either way the process enters Running
// with the last start hook, once the data directory, the store and the
// listeners have started, and shutdown begins with the first stop hook,
// before any of them stops.
func TestStartOrderDoesNotDependOnTheList(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // of the temporary data directory
	cfg := runConfig(t, "--api-token=t", "--data-directory-temporary", "--http-enabled", "--https-enabled=false",
		"--http-port=0", "--http-address=127.0.0.1")
	for _, order := range []string{"listed", "reversed"} {
		t.Run(order, func(t *testing.T) {
			modules := serviceModules(cfg, tracing.Settings{}, zap.NewNop())
			if order == "reversed" {
				slices.Reverse(modules)
			}
			phases := &phaseLog{}
			app := fx.New(append(modules, fx.Populate(&phases.state), fx.WithLogger(func() fxevent.Logger { return phases }))...)
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			if err := app.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := app.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			// The data directory, the store, the subscriptions, the listeners
			// and the lifecycle, each with a stop hook too (tracing has a
			// stop hook alone).
			n := len(phases.starts)
			if n < 5 || slices.Index(phases.starts, lifecycle.Running) != n-1 {
				t.Errorf("phases after each start hook %v, want Running after the last only", phases.starts)
			}
			if len(phases.stops) < n || slices.ContainsFunc(phases.stops, func(p lifecycle.Phase) bool { return p < lifecycle.ShuttingDown }) {
				t.Errorf("phases after each stop hook %v, want shutdown begun by the first", phases.stops)
			}
		})
	}
}

// runConfig parses args with the flags of `eventstore run` and loads them.
func runConfig(t *testing.T, args ...string) config.Config {
	t.Helper()
	var (
		cfg     config.Config
		loadErr error
	)
	app := &cli.App{
		Flags: config.Flags(),
		Action: func(c *cli.Context) error {
			cfg, loadErr = config.Load(c)
			return nil
		},
	}
	if err := app.Run(append([]string{"eventstore"}, args...)); err != nil || loadErr != nil {
		t.Fatalf("flags %q: %v %v", args, err, loadErr)
	}
	return cfg
}
