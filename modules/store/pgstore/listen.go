package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// channel is the notification channel of commits; the payload is the
// instance id of the committing backend, so that a node ignores its own.
const channel = "eventstore_commits"

// Waits before reconnecting the listening connection: from listenRetryWait,
// doubling, at most listenMaxWait.
const (
	listenRetryWait = 100 * time.Millisecond
	listenMaxWait   = 5 * time.Second
)

// listener holds a connection of its own (not from the pool) that LISTENs
// for commits and wakes the store: a non-blocking send on a channel with a
// buffer of one, so that any number of notifications while the store is
// busy make one wake-up. It reconnects with backoff when the connection
// drops, and wakes the store after each reconnect, since a notification may
// have been lost meanwhile.
type listener struct {
	cancel  context.CancelFunc
	stopped chan struct{}
}

func listen(cfg *pgx.ConnConfig, instance string, changes chan<- struct{}, log *zap.Logger) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{cancel: cancel, stopped: make(chan struct{})}
	wake := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(l.stopped)
		wait := listenRetryWait
		for ctx.Err() == nil {
			err := listenOnce(ctx, cfg, instance, wake, func() { wait = listenRetryWait })
			if ctx.Err() != nil {
				return
			}
			log.Warn("listening for commits of other nodes failed, reconnecting", zap.Error(err), zap.Duration("in", wait))
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, listenMaxWait)
		}
	}()
	return l
}

// listenOnce connects, listens and wakes the store for every notification
// of another backend until the connection fails.
func listenOnce(ctx context.Context, cfg *pgx.ConnConfig, instance string, wake, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	connected()
	wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != instance {
			wake()
		}
	}
}

func (l *listener) close() {
	l.cancel()
	<-l.stopped
}
