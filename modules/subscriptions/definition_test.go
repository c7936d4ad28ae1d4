package subscriptions

import (
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := Definition{Name: "billing", Subject: "/orders", Options: Defaults()}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*Definition)
		want   string
	}{
		{func(d *Definition) { d.Name = "a b" }, "invalid name 'a b'"},
		{func(d *Definition) { d.Options.EventTypes = []string{} }, "eventTypes takes 1 to 100 types"},
		{func(d *Definition) { d.Options.Partitions = 1025 }, "partitions must be 1 to 1024"},
		{func(d *Definition) { d.Options.MaxInFlight = 0 }, "maxInFlight must be 1 to 10000"},
		{func(d *Definition) { d.Options.AcknowledgeTimeout = 999 * time.Millisecond }, "acknowledgeTimeout must be 1s to 1h0m0s"},
		{func(d *Definition) { d.Options.MaxDeliveries = 1001 }, "maxDeliveries must be 1 to 1000"},
	} {
		d := ok
		c.change(&d)
		if err := d.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func TestSameAndMatches(t *testing.T) {
	a := Definition{Name: "s", Subject: "/orders", Options: Defaults()}
	a.Options.EventTypes = []string{"io.x.b", "io.x.a"}
	b := a
	b.Options.EventTypes = []string{"io.x.a", "io.x.b"}
	if !a.Same(b) {
		t.Fatal("the event types' order made a difference")
	}
	b.Options.Recursive = true
	if a.Same(b) {
		t.Fatal("recursive made no difference")
	}
	for _, c := range []struct {
		subject, eventType  string
		want, wantRecursive bool
	}{
		{"/orders", "io.x.a", true, true},
		{"/orders/1", "io.x.a", false, true},
		{"/ordersx", "io.x.a", false, false},
		{"/orders", "io.x.c", false, false},
	} {
		if got := a.Matches(c.subject, c.eventType); got != c.want {
			t.Errorf("%s %s: %v", c.subject, c.eventType, got)
		}
		if got := b.Matches(c.subject, c.eventType); got != c.wantRecursive {
			t.Errorf("recursive, %s %s: %v", c.subject, c.eventType, got)
		}
	}
	root := Definition{Subject: "/", Options: Options{Recursive: true}}
	if !root.Matches("/", "t") || !root.Matches("/a/b", "t") {
		t.Fatal("/ recursive does not take every subject")
	}
}

func TestStartFloor(t *testing.T) {
	if f := (Start{}).Floor(10); f != 0 {
		t.Fatal(f)
	}
	if f := (Start{Kind: FromEnd}).Floor(10); f != 10 {
		t.Fatal(f)
	}
	if f := (Start{Kind: AfterEvent, EventID: 4}).Floor(10); f != 5 {
		t.Fatal(f)
	}
}
