package lifecycle

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Announcement contributes fields to the one "eventstore is running" entry;
// it is called once all modules have started, so listeners can report the
// ports they bound.
type Announcement func() []zap.Field

// Hooks are the state transitions run by fx: OnStart, after every other
// module has started, enters Running and announces it; OnStop, before every
// other module stops, begins shutdown and waits out the drain period.
type Hooks struct {
	log           *zap.Logger
	state         *State
	drainPeriod   time.Duration
	announcements []Announcement
}

// NewHooks returns the state transitions of a process with drain period d.
func NewHooks(log *zap.Logger, state *State, d time.Duration, announcements []Announcement) *Hooks {
	return &Hooks{log: log, state: state, drainPeriod: d, announcements: announcements}
}

// Start enters Running and logs "eventstore is running" with the fields of
// every announcement.
func (h *Hooks) Start(context.Context) error {
	h.state.MarkRunning()
	var fields []zap.Field
	for _, a := range h.announcements {
		fields = append(fields, a()...)
	}
	h.log.Info("eventstore is running", fields...)
	return nil
}

// Stop begins shutdown (ping and health answer 503 from now on) and waits out
// the drain period before the other modules stop.
func (h *Hooks) Stop(ctx context.Context) error {
	return h.state.Drain(ctx, h.drainPeriod)
}
