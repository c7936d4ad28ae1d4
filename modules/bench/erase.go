package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// FillErasable writes n events in batches of 1,000, each batch with one
// event on subject and the others on a subject of the batch's own, so
// that subject's n/1,000 events lie spread over the whole log.
func (t Target) FillErasable(ctx context.Context, subject string, n int) error {
	prefix := fmt.Sprintf("/bench/erase/%d/common/", time.Now().UnixNano())
	return t.fill(ctx, (n+999)/1000, 4, func(batch int) [][]byte {
		common := fmt.Sprintf("%s%d", prefix, batch)
		return [][]byte{batchBody(min(1000, n-batch*1000), func(i int) (string, string) {
			if i == 500 || (i == 0 && n-batch*1000 <= 500) {
				return subject, EventType
			}
			return common, EventType
		})}
	})
}

// Erase erases the events of subject and returns how many it erased and
// how long the answer took.
func (t Target) Erase(ctx context.Context, subject string) (int, time.Duration, error) {
	client := newClient(1)
	defer client.CloseIdleConnections()
	body, err := json.Marshal(map[string]any{"subject": subject, "reason": "bench"})
	if err != nil {
		return 0, 0, err
	}
	var out bytes.Buffer
	start := time.Now()
	if err := t.call(ctx, client, "/api/v1/erase-events", body, &out); err != nil {
		return 0, 0, fmt.Errorf("erase-events: %w", err)
	}
	took := time.Since(start)
	var answer struct {
		Erased int `json:"erased"`
	}
	if err := json.Unmarshal(out.Bytes(), &answer); err != nil {
		return 0, 0, fmt.Errorf("erase-events answered %q: %w", out.Bytes(), err)
	}
	return answer.Erased, took, nil
}

// runErase measures an erasure on a store of opts.EraseEvents events:
// the 1,000 events of one subject (one in a thousand, spread over the
// log) erased while opts.Clients plain writers run, its time to the answer
// and the writers' latencies meanwhile, against the writers alone for as
// long.
func (r *runner) runErase() error {
	o := r.opts
	subject := fmt.Sprintf("/bench/erase/%d/person", time.Now().UnixNano())
	fmt.Fprintf(r.out, "erase: writing %d events, %d of them on %s\n", o.EraseEvents, (o.EraseEvents+999)/1000, subject)
	if err := r.target.FillErasable(r.ctx, subject, o.EraseEvents); err != nil {
		return err
	}
	name := fmt.Sprintf("write 1/request x%d", o.Clients)
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var (
		erased   int
		took     time.Duration
		err      error
		answered = make(chan struct{})
	)
	go func() {
		defer close(answered)
		defer cancel() // the writers stop with the answer
		time.Sleep(time.Second)
		erased, took, err = r.target.Erase(r.ctx, subject)
	}()
	during := r.measure("erase-writers", r.server, func() Result {
		return r.target.Write(ctx, name+" during the erasure", EventType, o.Clients, 1, time.Hour)
	})
	<-answered
	if err != nil {
		return err
	}
	alone := r.measure("erase-writers-alone", r.server, func() Result {
		return r.target.Write(r.ctx, name+" alone", EventType, o.Clients, 1, time.Duration(during.ElapsedSeconds*float64(time.Second)))
	})
	fmt.Fprintf(r.out, "%-28s erased %d of %d events in %v; writers' p99 %.1f ms during it (from 1 s before), %.1f ms alone\n", "erase",
		erased, o.EraseEvents, took.Round(time.Millisecond), during.LatencyP99Ms, alone.LatencyP99Ms)
	r.report.Scenarios = append(r.report.Scenarios, Record{Scenario: "erase", Name: fmt.Sprintf("erase %d of %d events", erased, o.EraseEvents),
		Events: int64(erased), Requests: 1, ElapsedSeconds: took.Seconds(), EventsPerSecond: float64(erased) / took.Seconds()})
	return nil
}
