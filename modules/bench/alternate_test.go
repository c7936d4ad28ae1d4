package bench

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestAlternatingGroup(t *testing.T) {
	for _, c := range []struct{ scenarios, want []string }{
		{[]string{"baseline", "write", "write-precondition", "batch", "write"}, []string{"baseline", "write", "write-precondition"}},
		{[]string{"write"}, []string{"write"}},
		{[]string{"batch", "write"}, nil},
		{nil, nil},
	} {
		if got := alternatingGroup(c.scenarios); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.scenarios, got, c.want)
		}
	}
}

func TestMergeSlices(t *testing.T) {
	var res Result
	var used *Usage
	for _, s := range []struct {
		res  Result
		used *Usage
	}{
		{Result{Name: "w", Requests: 10, Events: 10, Errors: 1, Elapsed: time.Second, Latencies: []time.Duration{3, 1}}, &Usage{CPU: time.Second, RSS: 10, PeakRSS: 30}},
		{Result{Name: "w", Requests: 30, Events: 30, Elapsed: time.Second, Latencies: []time.Duration{2}}, &Usage{CPU: 2 * time.Second, RSS: 20, PeakRSS: 25}},
	} {
		res, used = res.merge(s.res), used.add(s.used)
	}
	want := Result{Name: "w", Requests: 40, Events: 40, Errors: 1, Elapsed: 2 * time.Second, Latencies: []time.Duration{3, 1, 2}}
	if !reflect.DeepEqual(res, want) || res.EventsPerSecond() != 20 {
		t.Errorf("merged %+v, want %+v", res, want)
	}
	if *used != (Usage{CPU: 3 * time.Second, RSS: 20, PeakRSS: 30}) {
		t.Errorf("usage %+v", *used)
	}
	if used.add(nil) != nil {
		t.Error("an unknown usage is added")
	}
}
