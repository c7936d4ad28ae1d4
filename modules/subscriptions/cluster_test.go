package subscriptions

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestCluster(timeout time.Duration) (*cluster, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &cluster{node: "self", timeout: timeout, margin: min(timeout/5, 2*time.Second), now: clock.now,
		seen: map[string]observed{}}, clock
}

// TestJudgeReapsWhatStoodStill: a lease expires once this node saw its
// record at one version for the whole timeout, counted from when it first
// read that version; a renewal starts the count again, and a node whose
// record is gone is forgotten.
func TestJudgeReapsWhatStoodStill(t *testing.T) {
	c, clock := newTestCluster(10 * time.Second)
	t0 := clock.t
	steps := []struct {
		at      time.Duration
		present map[string]uint64
		expired []string
	}{
		{0, map[string]uint64{"a": 1, "b": 1}, nil},
		{9 * time.Second, map[string]uint64{"a": 1, "b": 2}, nil}, // b renewed
		{10 * time.Second, map[string]uint64{"a": 1, "b": 2}, []string{"a"}},
		{18 * time.Second, map[string]uint64{"b": 2}, nil}, // a reaped, b seen at 2 since 9 s
		{19 * time.Second, map[string]uint64{"b": 2}, []string{"b"}},
		{20 * time.Second, map[string]uint64{}, nil},
	}
	for _, s := range steps {
		clock.t = t0.Add(s.at)
		if got := c.judge(s.present, c.now()); !slices.Equal(got, s.expired) {
			t.Fatalf("at %v: expired %v, want %v", s.at, got, s.expired)
		}
	}
	if len(c.seen) != 0 {
		t.Errorf("nodes without a record are remembered: %v", c.seen)
	}
}

// TestValidFollowsTheClock: the node delivers until the start of its last
// renewal plus the timeout less the margin, by its clock, and counts the
// leases it saw renewed within the timeout as live.
func TestValidFollowsTheClock(t *testing.T) {
	c, clock := newTestCluster(10 * time.Second)
	t0 := clock.t
	c.registered, c.validUntil = true, t0.Add(c.timeout-c.margin)
	c.judge(map[string]uint64{"other": 4}, t0)
	clock.t = t0.Add(c.timeout - c.margin - time.Nanosecond)
	if !c.valid() || !c.live()["other"] || !c.live()["self"] {
		t.Fatalf("just before the end: valid %v, live %v", c.valid(), c.live())
	}
	clock.t = t0.Add(c.timeout - c.margin)
	if c.valid() {
		t.Fatal("valid at the end of the lease")
	}
	clock.t = t0.Add(c.timeout)
	if c.live()["other"] {
		t.Fatal("a lease not renewed for the timeout counts as live")
	}
}

// TestReapNeverBeforeTheHolderStops runs random schedules of a holder's
// renewals (each starts, then commits after a delay) and another node's
// reads of the lease records (each takes a while, and sees the renewals
// committed before it ends): the other node reaps the lease only after
// the holder stopped delivering (the end of validity of the last renewal
// it committed). It dates what a read saw by the time after the read, as
// observe does; dating it by the time before the read, as observe once
// did, breaks that in some of the same schedules, which the test shows
// too.
func TestReapNeverBeforeTheHolderStops(t *testing.T) {
	const timeout = 3 * time.Second
	broken := 0
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 7))
		for _, afterTheRead := range []bool{true, false} {
			c, clock := newTestCluster(timeout)
			t0 := clock.t
			ms := func(max int) time.Duration { return time.Duration(r.IntN(max)) * time.Millisecond }
			// The holder: renewals every second, each committed after up
			// to 1.5 s, until it stops at a random moment.
			type renewal struct{ sent, committed time.Time }
			var renewals []renewal
			stop := t0.Add(ms(10_000))
			for s := t0; s.Before(stop); s = s.Add(time.Second) {
				renewals = append(renewals, renewal{s, s.Add(ms(1500))})
			}
			// The observer: reads every second, each taking up to 2 s.
			for start := t0; start.Before(t0.Add(30 * time.Second)); start = start.Add(time.Second) {
				end := start.Add(ms(2000))
				version, validUntil := uint64(0), time.Time{}
				for i, rn := range renewals {
					if rn.committed.Before(end) {
						version, validUntil = uint64(i+1), rn.sent.Add(timeout-c.margin)
					}
				}
				present := map[string]uint64{}
				if version > 0 {
					present["holder"] = version
				}
				dated := end
				if !afterTheRead {
					dated = start
				}
				clock.t = dated
				if expired := c.judge(present, dated); len(expired) > 0 {
					if dated.Before(validUntil) {
						if afterTheRead {
							t.Fatalf("seed %d: reaped at %v, while the holder delivers until %v", seed, dated.Sub(t0), validUntil.Sub(t0))
						}
						broken++
					}
					break
				}
			}
		}
	}
	if broken == 0 {
		t.Error("dating a read by its start never reaped a valid lease: the schedules do not reach the case")
	}
	t.Logf("dated by the read's start, %d of 500 schedules reaped a valid lease", broken)
}
