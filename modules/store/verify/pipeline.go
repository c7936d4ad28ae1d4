package verify

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
	"github.com/eventstore-service/eventstore/modules/store"
)

// chunkIDs is the number of ids a chunk of Verify's pipeline covers.
const chunkIDs = 1024

// chunk is what a worker found of the events of one id range, for the
// chain check to take in id order. Chunks are reused, so memory stays
// within the chunks in flight, whatever the size of the events.
type chunk struct {
	to      uint64 // the last id it covers
	ids     []uint64
	results []verified // by event
	arena   []byte     // the values the results point to
	err     error      // reading failed after the events found
	done    chan struct{}
}

// verified is what a worker found of one event on its own.
type verified struct {
	problem error // the record does not decode, or its hash differs
	invalid error // its data does not match the schema of its type
	// subject and eventType name the event's indexes.
	subject, eventType          string
	hash, predecessorHash, time span
}

// span locates a value in a chunk's arena.
type span struct{ start, end int }

// keep copies value into the arena.
func (c *chunk) keep(value []byte) span {
	start := len(c.arena)
	c.arena = append(c.arena, value...)
	return span{start, len(c.arena)}
}

func (c *chunk) value(s span) []byte { return c.arena[s.start:s.end] }

// pipeline checks the events of ids 0 … to: workers each read the events
// of the next chunk of ids with an iterator of their own and check them on
// their own (decoding, hashing, schema), and the calling goroutine hands
// the chunks to the chain check in id order. Tickets bound the chunks
// taken and not yet checked to the slots, so chunk i always finds slot
// i mod len(slots) free.
type pipeline struct {
	backend store.Backend
	to      uint64
	schemas map[string]*schema.Schema
	data    *dataCheck // nil: no data indexes
	slots   []chunk
	tickets chan struct{}
	next    atomic.Uint64 // the next chunk to take
}

// runPipeline checks the events of ids 0 … to with workers goroutines
// (GOMAXPROCS when 0) and chain, until the log ends, to is reached, or a
// problem is found. It returns chain's first problem, a read error, or
// ctx's error, once every goroutine it started has ended.
func runPipeline(ctx context.Context, b store.Backend, to uint64, schemas map[string]*schema.Schema, data *dataCheck, workers int, chain *chainCheck) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pipeline{backend: b, to: to, schemas: schemas, data: data, slots: make([]chunk, 2*workers), tickets: make(chan struct{}, 2*workers)}
	for i := range p.slots {
		p.slots[i].done = make(chan struct{}, 1)
		p.tickets <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Go(func() { p.work(ctx) })
	}
	for i := uint64(0); ; i++ {
		c := &p.slots[i%uint64(len(p.slots))]
		if err := ctx.Err(); err != nil {
			return err // select below would take a chunk done as well as ctx done
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := chain.check(c); err != nil {
			return err
		}
		if c.err != nil {
			return fmt.Errorf("read event %d: %w", chain.n, c.err)
		}
		if chain.n <= c.to { // the log ends, or an event is missing
			return p.gap(chain.n)
		}
		if c.to == to {
			return nil
		}
		p.tickets <- struct{}{}
	}
}

// gap reports event n missing if a later one up to to is stored: the
// chain check found no event n, and nothing else after n-1 in its chunk.
func (p *pipeline) gap(n uint64) error {
	it := p.backend.Scan(store.Scan{Subject: "/", Recursive: true, From: n, To: p.to})
	found := it.Next()
	var next uint64
	if found {
		next = it.Record().ID
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("read event %d: %w", n, err)
	}
	if found {
		return corruption("event %d is missing (next stored id is %d)", n, next)
	}
	return nil
}

// work takes chunk after chunk and checks its events, until ctx is done or
// the chunks pass to.
func (p *pipeline) work(ctx context.Context) {
	w := eventChecker{checker: event.NewChecker(), schemas: p.schemas, names: map[string]string{}, data: p.data}
	w.keeper, _ = p.backend.(store.DigestKeeper)
	for {
		select {
		case <-p.tickets:
		case <-ctx.Done():
			return
		}
		i := p.next.Add(1) - 1
		from := i * chunkIDs
		if from/chunkIDs != i || from > p.to {
			return // beyond the ids to check
		}
		c := &p.slots[i%uint64(len(p.slots))]
		c.to = min(from+chunkIDs-1, p.to)
		c.ids, c.results, c.arena = c.ids[:0], c.results[:0], c.arena[:0]
		it := p.backend.Scan(store.Scan{Subject: "/", Recursive: true, From: from, To: c.to})
		for it.Next() {
			w.check(c, it.Record())
		}
		c.err = it.Close()
		if p.data != nil {
			p.data.merge(&w.sums)
		}
		c.done <- struct{}{}
	}
}

// maxNames bounds the subjects and types a worker keeps as strings.
const maxNames = 4096

// eventChecker is one worker's state.
type eventChecker struct {
	checker *event.Checker
	schemas map[string]*schema.Schema
	names   map[string]string // subjects and types, so that a repeated one costs no string
	data    *dataCheck
	sums    dataSums
	keeper  store.DigestKeeper // of a backend that keeps digests of erased data, else nil
}

// check decodes and hashes r, validates its data against the schema of its
// type, and keeps what the chain check needs in c.
func (w *eventChecker) check(c *chunk, r event.Record) {
	c.ids = append(c.ids, r.ID)
	v, err := w.checker.Check(r)
	erased := false
	if err != nil && w.keeper != nil {
		// An erased event's hash verifies with the kept digest of its
		// original data; its erased form is not validated against the
		// schema its original data met.
		kept, found, keptErr := w.keeper.KeptDataSum(r.ID)
		switch {
		case keptErr != nil:
			err = keptErr
		case found:
			v, err = w.checker.CheckErased(r, kept)
			if err == nil && !event.IsErased(v[event.MemberData]) {
				err = corruption("event %d has a kept digest but not the erased form as data", r.ID)
			}
			erased = true
		}
	}
	if err != nil {
		c.results = append(c.results, verified{problem: err})
		return
	}
	res := verified{
		subject: w.name(v[event.MemberSubject]), eventType: w.name(v[event.MemberType]),
		hash: c.keep(v[event.MemberHash]), predecessorHash: c.keep(v[event.MemberPredecessorHash]), time: c.keep(v[event.MemberTime]),
	}
	if sch := w.schemas[res.eventType]; sch != nil && !erased {
		res.invalid = sch.Validate(v[event.MemberData])
	}
	if w.data != nil {
		w.data.add(&w.sums, r.ID, res.eventType, v[event.MemberData])
	}
	c.results = append(c.results, res)
}

// name returns value as a string, the same string for the same value.
func (w *eventChecker) name(value []byte) string {
	if s, ok := w.names[string(value)]; ok {
		return s
	}
	if len(w.names) >= maxNames {
		clear(w.names)
	}
	s := string(value)
	w.names[s] = s
	return s
}
