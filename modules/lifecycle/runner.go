package lifecycle

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Exit codes of `eventstore run`.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitForced  = 130
)

// App is what the Runner starts and stops; *fx.App satisfies it.
type App interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Cleanup is best-effort work done when a shutdown timed out and the stop
// hooks may not have run, such as removing a temporary data directory.
type Cleanup func()

// Reload reads again what a module reads from files, on SIGHUP (the
// tokens). It must be quick and must not fail the process: a module keeps
// what it has when the new version is invalid, and says so in its log.
type Reload func()

// Runner starts the application, waits for SIGINT or SIGTERM, and stops it.
// It is the custom signal watcher of the lifecycle: fx alone would swallow a
// second signal while its stop hooks run.
type Runner struct {
	log   *zap.Logger
	state *State
	opts  RunnerOptions
}

// RunnerOptions configures a Runner.
type RunnerOptions struct {
	// StartTimeout limits the start of all modules, storage recovery included.
	StartTimeout time.Duration
	// DrainPeriod is how long the stop hooks keep the listeners open.
	DrainPeriod time.Duration
	// ShutdownTimeout limits the stop phase after the drain period.
	ShutdownTimeout time.Duration
	// Cleanups run when the stop timed out.
	Cleanups []Cleanup
	// Reloads run on every SIGHUP.
	Reloads []Reload
	// Exit ends the process at once on a second signal; os.Exit when nil.
	Exit func(code int)
}

// NewRunner returns a Runner driving state.
func NewRunner(log *zap.Logger, state *State, opts RunnerOptions) *Runner {
	if opts.Exit == nil {
		opts.Exit = os.Exit
	}
	return &Runner{log: log, state: state, opts: opts}
}

// Run starts app, waits for the first SIGINT or SIGTERM on signals (a SIGHUP
// runs the Reloads, or is logged and ignored when there are none), stops app, and returns the process exit code: 0 after
// a clean stop, 1 when the start failed or the stop timed out. A second
// SIGINT or SIGTERM during the stop exits the process with 130 at once.
func (r *Runner) Run(app App, signals <-chan os.Signal) int {
	startCtx, cancel := context.WithTimeout(context.Background(), r.opts.StartTimeout)
	err := app.Start(startCtx)
	cancel()
	if err != nil {
		r.log.Error("startup failed", zap.Error(err))
		return ExitFailure
	}

	sig := r.nextStopSignal(signals)
	r.state.BeginShutdown()
	r.log.Info("shutting down", zap.String("signal", signalName(sig)), zap.Duration("drainPeriod", r.opts.DrainPeriod))
	go r.forceOnSecondSignal(signals)

	// The stop hooks wait out the drain period first, so it counts on top.
	stopCtx, cancel := context.WithTimeout(context.Background(), r.opts.DrainPeriod+r.opts.ShutdownTimeout)
	defer cancel()
	err = app.Stop(stopCtx)
	r.state.MarkStopped()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		r.log.Error("shutdown timed out", zap.Duration("timeout", r.opts.ShutdownTimeout))
		for _, c := range r.opts.Cleanups {
			c()
		}
		return ExitFailure
	case err != nil:
		r.log.Error("shutdown failed", zap.Error(err))
		return ExitFailure
	}
	r.log.Info("stopped", zap.Int("exitCode", ExitOK))
	return ExitOK
}

// nextStopSignal returns the next SIGINT or SIGTERM, running the Reloads on
// SIGHUPs.
func (r *Runner) nextStopSignal(signals <-chan os.Signal) os.Signal {
	for sig := range signals {
		if sig == syscall.SIGHUP {
			if len(r.opts.Reloads) == 0 {
				r.log.Info("signal ignored", zap.String("signal", signalName(sig)))
				continue
			}
			r.log.Info("reloading", zap.String("signal", signalName(sig)))
			for _, reload := range r.opts.Reloads {
				reload()
			}
			continue
		}
		return sig
	}
	return nil
}

func (r *Runner) forceOnSecondSignal(signals <-chan os.Signal) {
	sig := r.nextStopSignal(signals)
	if sig == nil {
		return
	}
	r.log.WithOptions(zap.WithFatalHook(exitHook(func() { r.opts.Exit(ExitForced) }))).
		Fatal("second signal received, forcing exit", zap.String("signal", signalName(sig)))
}

// exitHook ends the process after a FATAL entry is written, with the exit
// code chosen by the caller rather than zap's fixed 1.
type exitHook func()

func (h exitHook) OnWrite(*zapcore.CheckedEntry, []zapcore.Field) { h() }

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case nil:
		return "none"
	}
	return sig.String()
}
