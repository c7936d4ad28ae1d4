package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Shape of the follow scenario: the schemas registered and the
// subscriptions consumed while the writes are measured, and the rate of
// the events written to the subscriptions meanwhile (each delivered to
// every one of them and acknowledged: settles on every node).
const (
	followSchemas       = 10_000
	followSubscriptions = 10
	followRate          = 20
)

// runFollow runs the follow scenario, meant for several nodes of one
// PostgreSQL database: the write scenario's load (opts.Clients clients, one
// event per request, on every node in turn) first with nothing for the
// nodes to follow but each other's events ("follow-none"), then with
// followSchemas schemas registered and followSubscriptions subscriptions
// consumed, one consumer each, on events written beside the load at
// followRate events/s ("follow-loaded"): the nodes renew their leases and
// settle deliveries, commits of state alone that every other node
// follows. The schemas' types and the subscriptions' subject are not those
// of the load, so the load's events are neither validated against a
// schema nor delivered.
func (r *runner) runFollow() error {
	o := r.opts
	label := fmt.Sprintf("write 1/request x%d", o.Clients)
	r.measure("follow-none", r.server, func() Result {
		return r.target.Write(r.ctx, label+", nothing else", EventType, o.Clients, 1, o.Duration)
	})

	start := time.Now()
	prefix := fmt.Sprintf("io.eventstore.bench.follow%d.t", time.Now().UnixNano())
	if err := r.target.registerSchemas(r.ctx, prefix, followSchemas); err != nil {
		return err
	}
	subject := fmt.Sprintf("/bench/follow/%d", time.Now().UnixNano())
	var names []string
	for i := range followSubscriptions {
		name := fmt.Sprintf("follow%d-%d", i, time.Now().UnixNano())
		create := fmt.Sprintf(`{"subscription":%q,"subject":%q,"options":{"recursive":true,"start":"end"}}`, name, subject)
		if err := r.target.call(r.ctx, newClient(1), "/api/v1/create-subscription", []byte(create), nil); err != nil {
			return err
		}
		names = append(names, name)
	}
	fmt.Fprintf(r.out, "%-28s %d schemas registered and %d subscriptions created in %.1f s (not measured)\n", "follow setup", followSchemas, followSubscriptions, time.Since(start).Seconds())

	// The subscriptions' load runs from before the measured writes (the
	// consumers connect, the leases are taken) until after them.
	ctx, cancel := context.WithCancel(r.ctx)
	followed := make(chan Result, 1)
	go func() {
		followed <- r.target.Follow(ctx, fmt.Sprintf("live x%d at %d events/s", followSubscriptions, followRate), names, subject, followRate, o.Duration+4*time.Second)
	}()
	time.Sleep(2 * time.Second)
	r.measure("follow-loaded", r.server, func() Result {
		return r.target.Write(r.ctx, fmt.Sprintf("%s, %d schemas, %d subscriptions consumed", label, followSchemas, followSubscriptions), EventType, o.Clients, 1, o.Duration)
	})
	res := <-followed
	cancel()
	fmt.Fprintf(r.out, "%-28s meanwhile %s\n", "", res)
	if res.Errors > 0 {
		return fmt.Errorf("%s: %d failed requests", res.Name, res.Errors)
	}
	return nil
}

// registerSchemas registers EventSchema for n event types prefix0,
// prefix1, …, eight at a time (on every node in turn).
func (t Target) registerSchemas(ctx context.Context, prefix string, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := t.RegisterSchema(ctx, fmt.Sprintf("%s%d", prefix, i), EventSchema); err != nil {
					errs <- fmt.Errorf("schema %d of %d: %w", i+1, n, err)
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
