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

// probe is what probeReads measured: the latencies of read-subscription
// and of a metrics scrape, each sorted.
type probe struct {
	reads, scrapes []time.Duration
	failed         int
}

// probeReads reads the subscription name with read-subscription and
// scrapes the metrics (health, format=openmetrics) one after the other,
// every probeInterval until ctx ends, as a console and Prometheus would
// while consumers drain it; it returns their latencies.
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
			return p
		case <-tick.C:
		}
		start := time.Now()
		if err := t.call(ctx, client, "/api/v1/read-subscription", read, nil); err != nil {
			if ctx.Err() == nil {
				p.failed++
			}
			continue
		}
		p.reads = append(p.reads, time.Since(start))
		start = time.Now()
		if err := t.scrape(ctx, client); err != nil {
			if ctx.Err() == nil {
				p.failed++
			}
			continue
		}
		p.scrapes = append(p.scrapes, time.Since(start))
	}
}

// scrape reads the metrics as Prometheus does.
func (t Target) scrape(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base()+"/api/v1/health?format=openmetrics", nil)
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
		return fmt.Errorf("health answered %d", resp.StatusCode)
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
	return fmt.Sprintf("read-subscription p50 %.2f ms, p99 %.2f ms, max %.2f ms; scrape p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d each, %d failed)",
		at(p.reads, 0.5), at(p.reads, 0.99), at(p.reads, 1), at(p.scrapes, 0.5), at(p.scrapes, 0.99), at(p.scrapes, 1), len(p.reads), p.failed)
}
