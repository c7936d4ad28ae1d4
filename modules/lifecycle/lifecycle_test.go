package lifecycle

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeApp lets a test decide how start and stop behave.
type fakeApp struct {
	startErr error
	stop     func(ctx context.Context) error
}

func (a *fakeApp) Start(context.Context) error { return a.startErr }

func (a *fakeApp) Stop(ctx context.Context) error {
	if a.stop != nil {
		return a.stop(ctx)
	}
	return nil
}

func newTestRunner(opts RunnerOptions) (*Runner, *State, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	state := NewState()
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Second
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = time.Second
	}
	if opts.Exit == nil {
		opts.Exit = func(code int) { panic("unexpected exit") }
	}
	return NewRunner(zap.New(core), state, opts), state, logs
}

func messages(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		out = append(out, e.Level.CapitalString()+" "+e.Message)
	}
	return out
}

func TestRunStartFailure(t *testing.T) {
	r, _, logs := newTestRunner(RunnerOptions{})
	code := r.Run(&fakeApp{startErr: errors.New("listen tcp :3000: address already in use")}, nil)
	if code != ExitFailure {
		t.Fatalf("exit code %d, want %d", code, ExitFailure)
	}
	entries := logs.FilterMessage("startup failed").All()
	if len(entries) != 1 || entries[0].Level != zapcore.ErrorLevel || entries[0].ContextMap()["error"] != "listen tcp :3000: address already in use" {
		t.Fatalf("want one ERROR startup failed with the error, got %v", messages(logs))
	}
}

func TestRunCleanStop(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signalName(sig), func(t *testing.T) {
			r, state, logs := newTestRunner(RunnerOptions{DrainPeriod: 20 * time.Millisecond})
			var phaseDuringStop Phase
			app := &fakeApp{stop: func(context.Context) error {
				phaseDuringStop = state.Phase()
				return nil
			}}
			signals := make(chan os.Signal, 2)
			signals <- syscall.SIGHUP // logged and ignored
			signals <- sig
			if code := r.Run(app, signals); code != ExitOK {
				t.Fatalf("exit code %d, want 0", code)
			}
			if phaseDuringStop != ShuttingDown || state.Phase() != Stopped {
				t.Fatalf("phase during stop %s, after %s", phaseDuringStop, state.Phase())
			}
			want := []string{"INFO signal ignored", "INFO shutting down", "INFO stopped"}
			if got := messages(logs); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Fatalf("log: got %v, want %v", got, want)
			}
			fields := logs.FilterMessage("shutting down").All()[0].ContextMap()
			if fields["signal"] != signalName(sig) || fields["drainPeriod"] != 20*time.Millisecond {
				t.Fatalf("shutting down fields: %v", fields)
			}
			if code := logs.FilterMessage("stopped").All()[0].ContextMap()["exitCode"]; code != int64(0) {
				t.Fatalf("stopped exitCode %v", code)
			}
		})
	}
}

func TestRunSecondSignalForcesExit(t *testing.T) {
	exited := make(chan int, 1)
	r, _, logs := newTestRunner(RunnerOptions{ShutdownTimeout: time.Minute, Exit: func(code int) { exited <- code }})
	release := make(chan struct{})
	app := &fakeApp{stop: func(context.Context) error { <-release; return nil }}
	signals := make(chan os.Signal, 2)
	signals <- syscall.SIGINT
	go r.Run(app, signals)
	signals <- syscall.SIGTERM
	select {
	case code := <-exited:
		if code != ExitForced {
			t.Fatalf("forced exit code %d, want %d", code, ExitForced)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second signal did not force an exit")
	}
	close(release)
	entries := logs.FilterMessage("second signal received, forcing exit").All()
	if len(entries) != 1 || entries[0].Level != zapcore.FatalLevel || entries[0].ContextMap()["signal"] != "SIGTERM" {
		t.Fatalf("want one FATAL entry naming SIGTERM, got %v", messages(logs))
	}
}

func TestRunStopTimeout(t *testing.T) {
	cleaned := false
	r, _, logs := newTestRunner(RunnerOptions{
		DrainPeriod:     10 * time.Millisecond,
		ShutdownTimeout: 50 * time.Millisecond,
		Cleanups:        []Cleanup{func() { cleaned = true }},
	})
	app := &fakeApp{stop: func(ctx context.Context) error {
		<-ctx.Done() // a stop hook that never finishes on its own
		return ctx.Err()
	}}
	signals := make(chan os.Signal, 1)
	signals <- syscall.SIGTERM
	if code := r.Run(app, signals); code != ExitFailure {
		t.Fatalf("exit code %d, want %d", code, ExitFailure)
	}
	if !cleaned {
		t.Fatal("cleanups did not run after the timeout")
	}
	entries := logs.FilterMessage("shutdown timed out").All()
	if len(entries) != 1 || entries[0].ContextMap()["timeout"] != 50*time.Millisecond {
		t.Fatalf("want ERROR shutdown timed out with the timeout, got %v", messages(logs))
	}
}

func TestStateTransitions(t *testing.T) {
	s := NewState()
	if s.Phase() != Starting || s.ShuttingDown() {
		t.Fatalf("new state: %s", s.Phase())
	}
	s.MarkRunning()
	if s.Phase() != Running || s.ShuttingDown() {
		t.Fatalf("after MarkRunning: %s", s.Phase())
	}
	s.BeginShutdown()
	s.MarkRunning() // no way back
	if s.Phase() != ShuttingDown || !s.ShuttingDown() {
		t.Fatalf("after BeginShutdown: %s", s.Phase())
	}
	select {
	case <-s.Stopping().Done():
		t.Fatal("Stopping closed before the drain ended")
	default:
	}
	start := time.Now()
	if err := s.Drain(context.Background(), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("Drain returned after %s, before the drain period", waited)
	}
	select {
	case <-s.Stopping().Done():
	default:
		t.Fatal("Stopping not closed after the drain")
	}
	s.MarkStopped()
	if s.Phase() != Stopped {
		t.Fatalf("after MarkStopped: %s", s.Phase())
	}
}

func TestDrainEndsWithContext(t *testing.T) {
	s := NewState()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Drain(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain with a cancelled context: %v", err)
	}
	select {
	case <-s.Stopping().Done():
	default:
		t.Fatal("Stopping not closed after a cancelled drain")
	}
}

func TestHooksAnnounce(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	s := NewState()
	h := NewHooks(zap.New(core), s, 0, []Announcement{
		func() []zap.Field { return []zap.Field{zap.String("version", "dev")} },
		func() []zap.Field { return []zap.Field{zap.Strings("listeners", []string{"http://0.0.0.0:3000"})} },
	})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries := logs.FilterMessage("eventstore is running").All()
	if len(entries) != 1 || s.Phase() != Running {
		t.Fatalf("want one running entry and phase running, got %d entries, %s", len(entries), s.Phase())
	}
	fields := entries[0].ContextMap()
	if fields["version"] != "dev" || fields["listeners"] == nil {
		t.Fatalf("announcement fields missing: %v", fields)
	}
	if err := h.Stop(context.Background()); err != nil || !s.ShuttingDown() {
		t.Fatalf("Stop: %v, phase %s", err, s.Phase())
	}
}
