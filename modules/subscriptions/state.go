package subscriptions

import (
	"errors"
	"slices"
	"time"
)

// Delivery is an event sent to the partition's owner and not settled yet.
type Delivery struct {
	EventID uint64
	// Attempt counts the sends of the event: 1 for the first.
	Attempt int
	// Due is when the event is sent again (attempt + 1), or parked after
	// MaxDeliveries attempts, unless it is settled before.
	Due time.Time
	// Resend has the event sent again at once with the same attempt, its
	// Due unchanged: to a new owner, or after a restart.
	Resend bool
	// Unsent is a delivery made but not sent yet (by a poll of another
	// consumer): it is sent at once with the same attempt, and its Due
	// starts then.
	Unsent bool
}

// Parked is an event the partition gave up on: settled without being
// acknowledged.
type Parked struct {
	EventID  uint64
	Attempts int
	At       time.Time
	Reason   string
}

// Partition is one partition of a subscription: it delivers its events in
// id order to its owner, at most MaxInFlight unsettled at once. Its floor
// is the position's successor: every event of the partition below it is
// settled (acknowledged or parked); above it, settled ids and the
// deliveries in flight are remembered. Only one goroutine uses a Partition.
type Partition struct {
	Index int
	// Epoch rises with every move and reset; a token of another epoch is
	// stale.
	Epoch uint64
	// Owner is the consumer the partition delivers to, "" for none.
	Owner string

	opts     Options
	floor    uint64
	cursor   uint64     // the next id to offer: every id below it was delivered, settled or is no event of the partition
	settled  []uint64   // settled ids at or above floor, ascending
	inFlight []Delivery // ascending by EventID
	replays  []Delivery // parked events sent once more, ascending by EventID; apart from the floor
	timedOut int        // deliveries sent again on their timeout since TakeTimeouts
}

// TakeTimeouts returns how many deliveries were sent again on their
// timeout since it was last called.
func (p *Partition) TakeTimeouts() int {
	n := p.timedOut
	p.timedOut = 0
	return n
}

// Errors of Deliver.
var (
	errNoRoom   = errors.New("the window is full")
	errBehind   = errors.New("the event lies before the cursor")
	errNotOwned = errors.New("the partition has no owner")
)

// NewPartition returns partition index of a subscription with opts whose
// first event is at floor or above.
func NewPartition(index int, opts Options, floor uint64) *Partition {
	return &Partition{Index: index, opts: opts, floor: floor, cursor: floor}
}

// Floor returns the id below which every event of the partition is
// settled.
func (p *Partition) Floor() uint64 { return p.floor }

// Position returns the highest id up to which every event of the
// partition is settled, and false before any (the floor is 0).
func (p *Partition) Position() (uint64, bool) { return p.floor - 1, p.floor > 0 }

// Cursor returns the id to look for the partition's next new event from.
func (p *Partition) Cursor() uint64 { return p.cursor }

// InFlight returns the deliveries sent and not settled, in id order; the
// slice is the partition's own.
func (p *Partition) InFlight() []Delivery { return p.inFlight }

// Room returns how many new events may be delivered now: replayed events
// take their places in the window too.
func (p *Partition) Room() int {
	if p.Owner == "" {
		return 0
	}
	return max(0, p.opts.MaxInFlight-len(p.inFlight)-len(p.replays))
}

// Replays returns the parked events being delivered once more, in id
// order; the slice is the partition's own.
func (p *Partition) Replays() []Delivery { return p.replays }

// Replay has the parked event id delivered once more, attempt 1, ahead of
// new events; false when the partition will deliver it anyway (it lies
// above the floor and is not settled: after a reset) or replays it
// already. A token names epoch and id, so one event is never both.
func (p *Partition) Replay(id uint64, now time.Time) bool {
	if !p.Settled(id) {
		return false
	}
	i, found := searchDeliveries(p.replays, id)
	if found {
		return false
	}
	p.replays = slices.Insert(p.replays, i, Delivery{EventID: id, Attempt: 1, Due: now.Add(p.opts.AcknowledgeTimeout), Resend: true})
	return true
}

// Settled reports whether the event id was settled (after a restart, the
// ids above the floor that must not be delivered again).
func (p *Partition) Settled(id uint64) bool {
	if id < p.floor {
		return true
	}
	_, found := slices.BinarySearch(p.settled, id)
	return found
}

// Deliver sends the event id, the partition's next one at or after the
// cursor, to the owner, and returns the delivery; a settled id is skipped
// (false). Unless sent, the delivery is made but left for Due to send.
func (p *Partition) Deliver(id uint64, now time.Time, sent bool) (Delivery, bool, error) {
	switch {
	case p.Owner == "":
		return Delivery{}, false, errNotOwned
	case id < p.cursor:
		return Delivery{}, false, errBehind
	case p.Settled(id):
		p.Skip(id + 1)
		return Delivery{}, false, nil
	case len(p.inFlight) >= p.opts.MaxInFlight:
		return Delivery{}, false, errNoRoom
	}
	d := Delivery{EventID: id, Attempt: 1, Due: now.Add(p.opts.AcknowledgeTimeout), Unsent: !sent}
	p.inFlight = append(p.inFlight, d)
	p.cursor = id + 1
	return d, true, nil
}

// Skip moves the cursor to to: no event of the partition lies between the
// cursor and to but those delivered or settled.
func (p *Partition) Skip(to uint64) {
	if to > p.cursor {
		p.cursor = to
		p.advance()
	}
}

// Due returns up to limit deliveries due now, replays first, each in id
// order, sent again with its attempt raised (or the same attempt, to a new
// owner), and the events parked instead because they had MaxDeliveries
// attempts. Those beyond limit stay due for the next call.
func (p *Partition) Due(now time.Time, limit int) (again []Delivery, parked []Parked) {
	if p.Owner == "" {
		return nil, nil
	}
	// Replays first: they go ahead of the events in flight.
	p.replays, again, parked = p.due(p.replays, now, limit, nil, nil)
	n := len(parked)
	p.inFlight, again, parked = p.due(p.inFlight, now, limit, again, parked)
	for _, pk := range parked[n:] {
		p.insertSettled(pk.EventID)
	}
	if len(parked) > n {
		p.advance()
	}
	return again, parked
}

// due sends again the deliveries of list that timed out (attempt + 1; or
// parks them when they had MaxDeliveries attempts) and those to resend
// (same attempt), while again holds fewer than limit, appends them to
// again and parked, and returns what is left of list.
func (p *Partition) due(list []Delivery, now time.Time, limit int, again []Delivery, parked []Parked) ([]Delivery, []Delivery, []Parked) {
	kept := list[:0]
	for _, d := range list {
		switch {
		case d.Unsent && len(again) < limit:
			d.Unsent, d.Resend, d.Due = false, false, now.Add(p.opts.AcknowledgeTimeout)
			again = append(again, d)
		case d.Unsent: // for the next call
		case d.Due.After(now):
			if d.Resend && len(again) < limit {
				d.Resend = false
				again = append(again, d)
			}
		case d.Attempt >= p.opts.MaxDeliveries:
			parked = append(parked, Parked{EventID: d.EventID, Attempts: d.Attempt, At: now})
			continue
		case len(again) >= limit: // due, for the next call
		default:
			d.Attempt++
			d.Due, d.Resend = now.Add(p.opts.AcknowledgeTimeout), false
			again = append(again, d)
			p.timedOut++
		}
		kept = append(kept, d)
	}
	return kept, again, parked
}

// NextDue returns when the first delivery in flight (or replayed) is due,
// false when none is; one to resend or not sent yet is due at once (the
// zero time).
func (p *Partition) NextDue() (time.Time, bool) {
	var next time.Time
	found := false
	for _, list := range [][]Delivery{p.inFlight, p.replays} {
		for _, d := range list {
			due := d.Due
			if d.Resend || d.Unsent {
				due = time.Time{}
			}
			if !found || due.Before(next) {
				next, found = due, true
			}
		}
	}
	return next, found
}

// find returns the list (the deliveries in flight, or the replays) and the
// index in it of the delivery of t, or nil when t is stale: of another
// epoch, of an event not in flight (settled, or never delivered), or of
// another attempt than the one in flight.
func (p *Partition) find(t Token) (*[]Delivery, int) {
	if t.Epoch != p.Epoch {
		return nil, -1
	}
	for _, list := range []*[]Delivery{&p.inFlight, &p.replays} {
		if i, found := searchDeliveries(*list, t.EventID); found && (*list)[i].Attempt == t.Attempt {
			return list, i
		}
	}
	return nil, -1
}

// searchDeliveries finds the delivery of id in list, ascending by id.
func searchDeliveries(list []Delivery, id uint64) (int, bool) {
	return slices.BinarySearchFunc(list, id, func(d Delivery, id uint64) int {
		switch {
		case d.EventID < id:
			return -1
		case d.EventID > id:
			return 1
		}
		return 0
	})
}

// Acknowledge settles the delivery of t; false when t is stale.
func (p *Partition) Acknowledge(t Token) bool {
	list, i := p.find(t)
	if list == nil {
		return false
	}
	p.settle(list, i)
	return true
}

// Park settles the delivery of t without acknowledging it and returns the
// parked event; false when t is stale.
func (p *Partition) Park(t Token, reason string, now time.Time) (Parked, bool) {
	list, i := p.find(t)
	if list == nil {
		return Parked{}, false
	}
	parked := Parked{EventID: t.EventID, Attempts: (*list)[i].Attempt, At: now, Reason: reason}
	p.settle(list, i)
	return parked, true
}

// Retry has the delivery of t sent again after the delay (counting toward
// MaxDeliveries); false when t is stale.
func (p *Partition) Retry(t Token, after time.Duration, now time.Time) bool {
	list, i := p.find(t)
	if list == nil {
		return false
	}
	(*list)[i].Due = now.Add(after)
	return true
}

// Move gives the partition to owner ("" for none): the epoch rises, so
// every token of the old owner is stale, and the deliveries in flight are
// sent again to the new owner at once, in id order, with the same attempt.
// Their acknowledge timeouts keep running: an event that makes every owner
// fail times out and is parked in the end, while the churn of consumers
// parks nothing by itself.
func (p *Partition) Move(owner string) {
	p.Owner = owner
	p.Epoch++
	for _, list := range [][]Delivery{p.inFlight, p.replays} {
		for i := range list {
			list[i].Resend = true
		}
	}
}

// Reset moves the partition's floor to floor (a rebuild from there): the
// epoch rises, and the deliveries in flight and the settled ids above the
// floor are forgotten. Replays of parked events end: it returns them, to
// be parked again.
func (p *Partition) Reset(floor uint64, now time.Time) []Parked {
	p.Epoch++
	p.floor, p.cursor = floor, floor
	p.settled, p.inFlight = nil, nil
	var parked []Parked
	for _, d := range p.replays {
		parked = append(parked, Parked{EventID: d.EventID, Attempts: d.Attempt, At: now})
	}
	p.replays = nil
	return parked
}

// settle removes the delivery at index i of list; an event in flight is
// then remembered as settled (a replayed one was settled before).
func (p *Partition) settle(list *[]Delivery, i int) {
	id := (*list)[i].EventID
	if i == 0 { // settles come mostly in id order: no copying then
		*list = (*list)[1:]
	} else {
		*list = slices.Delete(*list, i, i+1)
	}
	if list == &p.inFlight {
		p.insertSettled(id)
		p.advance()
	}
}

func (p *Partition) insertSettled(id uint64) {
	if i, found := slices.BinarySearch(p.settled, id); !found {
		p.settled = slices.Insert(p.settled, i, id)
	}
}

// advance moves the floor over the settled prefix: up to the first
// delivery in flight, or to the cursor when none is.
func (p *Partition) advance() {
	floor := p.cursor
	if len(p.inFlight) > 0 {
		floor = p.inFlight[0].EventID
	}
	if floor > p.floor {
		p.floor = floor
	}
	i, _ := slices.BinarySearch(p.settled, p.floor)
	p.settled = slices.Delete(p.settled, 0, i)
}

// clone returns a copy of p that shares nothing with it, reusing the
// slices of into, an earlier clone that is no longer used.
func (p *Partition) clone(into Partition) Partition {
	c := *p
	c.settled = append(into.settled[:0], p.settled...)
	c.inFlight = append(into.inFlight[:0], p.inFlight...)
	c.replays = append(into.replays[:0], p.replays...)
	return c
}
