package pgstore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// A database that stops answering without closing its connections (its
// processes paused, a network that drops packets) would hold every round
// trip for queryTimeout. The watchdog finds it within probeInterval +
// probeTimeout instead: on a connection of its own, not from the pool (an
// exhausted pool cannot starve it), it sends an empty statement every
// probeInterval, each bounded by probeTimeout, and connecting by
// probeTimeout a host. A probe without an answer in time makes the backend
// unresponsive (liveness) until a probe gets one. A probe that fails at
// once (a refused connection, a server shutting down) does not: such a
// failure reaches every round trip as fast, and the store handles it as
// ever. The probe runs beside the commits and adds no round trip to them.
const (
	probeInterval = 250 * time.Millisecond
	probeTimeout  = time.Second
)

// errNotAnswering is why a commit fails at once while the database does
// not answer; wrap classifies it as store.ErrUnavailable.
var errNotAnswering = errors.New("the database does not answer")

// liveness tells whether the database answers, as the watchdog last found,
// and holds the context that every round trip of the backend derives from:
// it is cancelled when the database stops answering, so that the round
// trips in flight end and new ones fail at once, and replaced by a new one
// when it answers again. Only the watchdog changes it.
type liveness struct {
	state atomic.Pointer[liveState]
}

// liveState is one period: the database answers (answered nil), or it has
// not answered since lostAt.
type liveState struct {
	ctx      context.Context // cancelled while the database does not answer
	cancel   context.CancelFunc
	lostAt   time.Time
	answered chan struct{} // closed when the database answers again
}

func newLiveness() *liveness {
	ctx, cancel := context.WithCancel(context.Background())
	l := &liveness{}
	l.state.Store(&liveState{ctx: ctx, cancel: cancel})
	return l
}

// unresponsive reports whether the database stopped answering.
func (l *liveness) unresponsive() bool { return l.state.Load().answered != nil }

// timeout returns the context of one round trip: it ends after
// queryTimeout or when the database stops answering, at once while it does
// not answer.
func (l *liveness) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(l.state.Load().ctx, queryTimeout)
}

// bound returns ctx bounded as the contexts of timeout are.
func (l *liveness) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	stop := context.AfterFunc(l.state.Load().ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// lost marks the database as not answering, then ends the round trips in
// flight (so that their callers find it marked); it reports whether the
// database answered until now.
func (l *liveness) lost() bool {
	st := l.state.Load()
	if st.answered != nil {
		return false
	}
	l.state.Store(&liveState{ctx: st.ctx, cancel: st.cancel, lostAt: time.Now(), answered: make(chan struct{})})
	st.cancel()
	return true
}

// found marks the database as answering again and returns for how long it
// did not (0 if it answered already).
func (l *liveness) found() time.Duration {
	st := l.state.Load()
	if st.answered == nil {
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.state.Store(&liveState{ctx: ctx, cancel: cancel})
	close(st.answered)
	return max(time.Since(st.lostAt), time.Nanosecond)
}

// sleep waits for d, or less when the database answers again meanwhile.
func (l *liveness) sleep(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-l.state.Load().answered: // nil, never ready, while it answers
	}
}

// end cancels the context of the round trips for good.
func (l *liveness) end() { l.state.Load().cancel() }

// watchdog probes the database and keeps its liveness up to date.
type watchdog struct {
	cfg     *pgx.ConnConfig
	live    *liveness
	log     *zap.Logger
	conn    *pgx.Conn // the kept connection, nil after a failure; owned by run
	cancel  context.CancelFunc
	stopped chan struct{}
}

// watch starts the watchdog of live on connections of cfg (a copy of the
// pool's).
func watch(cfg *pgx.ConnConfig, live *liveness, log *zap.Logger) *watchdog {
	cfg.ConnectTimeout = probeTimeout // a host; pgx tries the next one after it
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchdog{cfg: cfg, live: live, log: log, cancel: cancel, stopped: make(chan struct{})}
	go w.run(ctx)
	return w
}

// run probes every probeInterval until ctx ends.
func (w *watchdog) run(ctx context.Context) {
	defer close(w.stopped)
	defer w.drop()
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return
		}
		err := w.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		w.report(err)
	}
}

// probe sends an empty statement on the kept connection, or on a new one
// when there is none or it broke at once (a restart, a terminated
// session), each within probeTimeout.
func (w *watchdog) probe(ctx context.Context) error {
	if w.conn != nil {
		err := ping(ctx, w.conn)
		if err == nil {
			return nil
		}
		w.drop()
		if timedOut(err) {
			return err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, w.cfg)
	if err != nil {
		return err
	}
	w.conn = conn
	if err := ping(ctx, conn); err != nil {
		w.drop()
		return err
	}
	return nil
}

// ping sends an empty statement on conn within probeTimeout.
func ping(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return conn.Ping(ctx)
}

// drop closes the kept connection, if any.
func (w *watchdog) drop() {
	if w.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	_ = w.conn.Close(ctx)
	w.conn = nil
}

// report updates the liveness with the outcome of a probe: no answer
// within probeTimeout means that the database stopped answering; a success,
// or a failure reported at once, that it answers.
func (w *watchdog) report(err error) {
	if err != nil && timedOut(err) {
		if w.live.lost() {
			w.log.Warn("the database does not answer, refusing requests until it does", zap.Error(err), zap.Duration("probeTimeout", probeTimeout))
		}
		return
	}
	down := w.live.found()
	switch {
	case down == 0:
	case err == nil:
		w.log.Info("the database answers again", zap.Duration("unansweredFor", down))
	default: // e.g. stopped while paused: it refuses at once, as a database that is down
		w.log.Warn("the database fails at once instead of not answering", zap.Error(err), zap.Duration("unansweredFor", down))
	}
}

// stop ends the watchdog and closes its connection.
func (w *watchdog) stop() {
	w.cancel()
	<-w.stopped
}

// timedOut reports whether err is a round trip's timeout: no answer in time.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}
