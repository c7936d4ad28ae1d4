package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// probeInterval is how often probeReads reads while a drain runs.
const probeInterval = 100 * time.Millisecond

// probe is what probeReads measured: the latencies of read-subscription,
// of a metrics scrape and of a ping, each sorted.
type probe struct {
	reads, scrapes, pings []time.Duration
	failed                int
}

// probeReads reads the subscription name with read-subscription and
// scrapes the metrics (health, format=openmetrics) one after the other,
// every probeInterval until ctx ends, as a console and Prometheus would
// while consumers drain it, and pings before them: a ping waits for
// nothing, so its latency is what the machine's load alone adds to any
// request. It returns their latencies.
func (t Target) probeReads(ctx context.Context, name string) probe {
	var p probe
	client := newClient(1)
	read := []byte(fmt.Sprintf(`{"subscription":%q}`, name))
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			slices.Sort(p.reads)
			slices.Sort(p.scrapes)
			slices.Sort(p.pings)
			return p
		case <-tick.C:
		}
		start := time.Now()
		if err := t.get(ctx, client, "/api/v1/ping"); err != nil {
			if ctx.Err() == nil {
				p.failed++
			}
			continue
		}
		p.pings = append(p.pings, time.Since(start))
		start = time.Now()
		if err := t.call(ctx, client, "/api/v1/read-subscription", read, nil); err != nil {
			if ctx.Err() == nil {
				p.failed++
			}
			continue
		}
		p.reads = append(p.reads, time.Since(start))
		start = time.Now()
		if err := t.get(ctx, client, "/api/v1/health?format=openmetrics"); err != nil {
			if ctx.Err() == nil {
				p.failed++
			}
			continue
		}
		p.scrapes = append(p.scrapes, time.Since(start))
	}
}

// get reads path with GET, with the token, as Prometheus scrapes the
// metrics; anything but 200 is an error.
func (t Target) get(ctx context.Context, client *http.Client, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", path, resp.StatusCode)
	}
	return nil
}

// String sums the probe up: p50, p99 and the longest of each.
func (p probe) String() string {
	at := func(ds []time.Duration, q float64) float64 {
		if len(ds) == 0 {
			return 0
		}
		return float64(ds[int(float64(len(ds)-1)*q)].Microseconds()) / 1000
	}
	sum := func(what string, ds []time.Duration) string {
		return fmt.Sprintf("%s p50 %.2f ms, p99 %.2f ms, max %.2f ms", what, at(ds, 0.5), at(ds, 0.99), at(ds, 1))
	}
	return fmt.Sprintf("%s; %s; beside them %s (%d reads, %d failed)",
		sum("read-subscription", p.reads), sum("scrape", p.scrapes), sum("ping", p.pings), len(p.reads), p.failed)
}
