package lifecycle

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is a state of the process.
type Phase int32

// Phases in the order the process passes them.
const (
	Starting Phase = iota
	Running
	ShuttingDown
	Stopped
)

// String names the phase.
func (p Phase) String() string {
	switch p {
	case Starting:
		return "starting"
	case Running:
		return "running"
	case ShuttingDown:
		return "shutting down"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// State is the process state, safe for concurrent use. Handlers ask it
// whether to answer 503; streams wait on Stopping to end themselves.
type State struct {
	phase        atomic.Int32
	restoring    atomic.Bool
	shutdownOnce sync.Once
	stopping     context.Context
	stop         context.CancelFunc
}

// NewState returns a State in the phase Starting.
func NewState() *State {
	stopping, stop := context.WithCancel(context.Background())
	return &State{stopping: stopping, stop: stop}
}

// Phase returns the current phase.
func (s *State) Phase() Phase { return Phase(s.phase.Load()) }

// ShuttingDown reports whether shutdown has begun (or is over).
func (s *State) ShuttingDown() bool { return s.Phase() >= ShuttingDown }

// Stopping is done when the stop phase begins: open streams end then.
func (s *State) Stopping() context.Context { return s.stopping }

// MarkRunning enters Running; it has no effect once shutdown has begun.
func (s *State) MarkRunning() {
	s.phase.CompareAndSwap(int32(Starting), int32(Running))
}

// BeginShutdown enters ShuttingDown; calling it again has no effect.
func (s *State) BeginShutdown() {
	s.shutdownOnce.Do(func() {
		for {
			p := s.phase.Load()
			if p >= int32(ShuttingDown) || s.phase.CompareAndSwap(p, int32(ShuttingDown)) {
				return
			}
		}
	})
}

// Drain begins shutdown, waits for the drain period d (or until ctx ends),
// and then begins the stop phase by closing Stopping.
func (s *State) Drain(ctx context.Context, d time.Duration) error {
	s.BeginShutdown()
	defer s.stop()
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BeginRestore marks a restore as running, unless one already is (then it
// returns false). While one runs, the service answers only ping, health and
// the restore itself.
func (s *State) BeginRestore() bool { return s.restoring.CompareAndSwap(false, true) }

// EndRestore marks the restore as over.
func (s *State) EndRestore() { s.restoring.Store(false) }

// Restoring reports whether a restore is running.
func (s *State) Restoring() bool { return s.restoring.Load() }

// MarkStopped enters Stopped.
func (s *State) MarkStopped() {
	s.BeginShutdown()
	s.phase.Store(int32(Stopped))
}
