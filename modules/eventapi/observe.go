package eventapi

import (
	"math"
	"net/http"
	"time"

	"github.com/eventstore-service/eventstore/modules/auth"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/httpkit"
	"github.com/eventstore-service/eventstore/modules/store"
)

// ObserveEventsPath is the path of the live stream of events.
const ObserveEventsPath = "/api/v1/observe-events"

// ObserveOptions select the events of an observer.
type ObserveOptions struct {
	Subject   string
	Recursive bool
	Lower     *store.Bound
	// FromLatest starts at the latest event with its subject and type;
	// when there is none, ReadEverything starts at the beginning, otherwise
	// the observer waits for the first such event to be written.
	FromLatest *store.FromLatest
}

type observeOptions struct {
	Recursive       bool            `json:"recursive"`
	LowerBound      *wireBound      `json:"lowerBound"`
	FromLatestEvent *wireFromLatest `json:"fromLatestEvent"`
}

// DecodeObserve turns an observe-events body into observe options.
func DecodeObserve(body []byte) (ObserveOptions, error) {
	var req readBody
	if err := httpkit.DecodeJSON(body, &req); err != nil {
		return ObserveOptions{}, err
	}
	if !event.ValidSubject(req.Subject) {
		return ObserveOptions{}, badRequest("invalid subject: %s", event.Quote(req.Subject))
	}
	if err := httpkit.CheckOptions(req.Options, "recursive", "lowerBound", "fromLatestEvent"); err != nil {
		return ObserveOptions{}, err
	}
	var o observeOptions
	if err := decodeOptions(req.Options, &o); err != nil {
		return ObserveOptions{}, err
	}
	opts := ObserveOptions{Subject: req.Subject, Recursive: o.Recursive}
	var err error
	if opts.Lower, err = decodeBound(o.LowerBound); err != nil {
		return ObserveOptions{}, err
	}
	if opts.FromLatest, err = decodeFromLatest(o.FromLatestEvent, "wait-for-event"); err != nil {
		return ObserveOptions{}, err
	}
	if opts.FromLatest != nil && opts.Lower != nil {
		return ObserveOptions{}, badRequest("invalid request: lowerBound and fromLatestEvent cannot be combined")
	}
	return opts, nil
}

// observeEvents is POST /api/v1/observe-events: the matching durable
// events, then every matching event as it becomes durable, in id order,
// with a heartbeat after each idle second. The observer follows the store by
// position: woken when the durable head moves, it reads what it has not
// sent yet (from the store's live window, or from storage when it fell
// behind), so it needs no queue of its own and never holds a writer up.
func (a *API) observeEvents(w http.ResponseWriter, r *http.Request) {
	body, err := httpkit.ReadBody(r)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	opts, err := DecodeObserve(body)
	if err != nil {
		httpkit.WriteError(w, err)
		return
	}
	if !auth.Allowed(r.Context(), readNeed(opts.Subject, opts.FromLatest)) {
		auth.Refuse(w, r)
		return
	}
	if a.refuseUnreachable(w) {
		return
	}
	stream := a.startStream(w, r)
	defer stream.end()
	a.metrics.observers.Inc()
	defer a.metrics.observers.Dec()

	liveFrom := a.store.Durable() // events from here on count as live
	o := observer{api: a, stream: stream, opts: opts, liveFrom: liveFrom, pipe: newLinePipe()}
	if err := o.start(); err != nil {
		stream.Error(a.ReadError(err).Message)
		return
	}
	o.follow()
}

// observer is the state of one observe stream.
type observer struct {
	api      *API
	stream   *lineStream
	opts     ObserveOptions
	liveFrom uint64
	pipe     *linePipe // of large catch-ups, reused by each
	line     []byte    // scratch of inline catch-ups
	position uint64    // the next id to consider
	waiting  bool      // for the first event of opts.FromLatest
}

// start sets the first position from the options.
func (o *observer) start() error {
	switch {
	case o.opts.Lower != nil && o.opts.Lower.Inclusive:
		o.position = o.opts.Lower.ID
	case o.opts.Lower != nil:
		o.position = o.opts.Lower.ID + 1
		if o.opts.Lower.ID == math.MaxUint64 {
			o.position = math.MaxUint64
		}
	case o.opts.FromLatest != nil:
		id, found, err := o.api.store.LatestID(o.opts.FromLatest.Subject, o.opts.FromLatest.Type)
		switch {
		case err != nil:
			return err
		case found:
			o.position = id
		case !o.opts.FromLatest.ReadEverything:
			o.waiting, o.position = true, o.liveFrom
		}
	}
	return nil
}

// follow streams until the client leaves, the service stops or a read fails.
func (o *observer) follow() {
	heartbeat := time.NewTimer(HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		changed := o.api.store.Changed() // before reading the head, so no advance is missed
		durable := o.api.store.Durable()
		if o.position < durable {
			ok, err := o.catchUp(durable)
			if err != nil {
				o.stream.Error(o.api.ReadError(err).Message)
				return
			}
			if !ok {
				return
			}
			heartbeat.Reset(HeartbeatInterval)
			continue
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if o.stream.heartbeat() != nil {
				return
			}
			heartbeat.Reset(HeartbeatInterval)
		case <-o.stream.ctx.Done():
			return
		case <-o.stream.stopping:
			o.stream.endEarly()
			return
		}
	}
}

// catchUp sends the matching events from the position up to durable; while
// waiting for the awaited event it only looks for it. ok is false when the
// stream ended.
func (o *observer) catchUp(durable uint64) (ok bool, err error) {
	if o.waiting {
		fl := o.opts.FromLatest
		it := o.api.store.Scan(store.Scan{Subject: fl.Subject, Type: fl.Type, From: o.position, To: durable - 1})
		found := it.Next()
		var id uint64
		if found {
			id = it.Record().ID
		}
		if err := it.Close(); err != nil {
			return false, err
		}
		if !found {
			o.position = durable
			return true, nil
		}
		o.waiting, o.position = false, id
	}
	it := o.api.store.Scan(store.Scan{Subject: o.opts.Subject, Recursive: o.opts.Recursive, From: o.position, To: durable - 1})
	var live int
	countLive := func(id uint64) {
		if id >= o.liveFrom {
			live++
		}
	}
	var sent int
	if durable-o.position <= inlineCatchUp {
		sent, ok, err = o.streamInline(it, countLive)
	} else {
		sent, ok = o.api.streamEvents(o.stream, o.pipe, it, countLive)
	}
	o.api.metrics.eventsRead.WithLabelValues("observe-events").Add(float64(sent))
	o.api.metrics.observeSent.Add(float64(live))
	o.position = durable
	return ok, err
}

// inlineCatchUp is the largest catch-up an observer writes itself; larger
// ones are formatted ahead by the stream's prefetcher.
const inlineCatchUp = 64

// streamInline writes the few events of it without a producer goroutine:
// the usual case of an observer following the head.
func (o *observer) streamInline(it store.RecordIterator, sent func(id uint64)) (n int, ok bool, err error) {
	for it.Next() {
		o.line = o.api.appendEventLine(o.line[:0], it.Record())
		if err := o.stream.send(o.line); err != nil {
			return n, false, it.Close()
		}
		n++
		sent(it.Record().ID)
	}
	return n, true, it.Close()
}
