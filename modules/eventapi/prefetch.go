package eventapi

import (
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Limits of the read-ahead of a stream: lines are formatted in batches of
// up to batchLines lines or batchBytes bytes, and a stream owns at most
// prefetchBatches batches, reused from one read to the next, so memory
// stays flat whatever the result size.
const (
	batchLines      = 256
	batchBytes      = 64 << 10
	prefetchBatches = 4
)

// lineBatch holds complete NDJSON lines, one after the other.
type lineBatch struct {
	buf  []byte
	ends []int    // end offset of each line in buf
	ids  []uint64 // event id of each line
	err  error    // set on the last batch if the iterator failed
}

// lines calls write for every line of the batch in order; it stops at
// write's first error.
func (b *lineBatch) lines(write func(id uint64, line []byte) error) error {
	start := 0
	for i, end := range b.ends {
		if err := write(b.ids[i], b.buf[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// prefetcher formats the event lines of iterators in a goroutine of its
// own, ahead of the goroutine that writes them to the client, so that the
// store and the network are worked on in parallel. One prefetcher serves a
// stream; its batches grow as needed and are reused by every read.
type prefetcher struct {
	emitter *event.Emitter
	free    chan *lineBatch
}

func newPrefetcher(emitter *event.Emitter) *prefetcher {
	p := &prefetcher{emitter: emitter, free: make(chan *lineBatch, prefetchBatches)}
	for i := 0; i < prefetchBatches; i++ {
		p.free <- &lineBatch{}
	}
	return p
}

// prefetch is one read of a prefetcher.
type prefetch struct {
	*prefetcher
	full  chan *lineBatch
	done  chan struct{}
	ended chan struct{}
}

// start begins reading it; the caller must call stop when done, which also
// waits until the iterator is closed.
func (p *prefetcher) start(it store.RecordIterator) *prefetch {
	run := &prefetch{prefetcher: p, full: make(chan *lineBatch, prefetchBatches), done: make(chan struct{}), ended: make(chan struct{})}
	go run.run(it)
	return run
}

func (p *prefetch) run(it store.RecordIterator) {
	defer close(p.ended)
	defer close(p.full)
	var b *lineBatch
	take := func() bool {
		select {
		case b = <-p.free:
			b.buf, b.ends, b.ids, b.err = b.buf[:0], b.ends[:0], b.ids[:0], nil
			return true
		case <-p.done:
			return false
		}
	}
	send := func() bool {
		select {
		case p.full <- b:
			b = nil
			return true
		case <-p.done:
			return false
		}
	}
	if !take() {
		_ = it.Close()
		return
	}
	for it.Next() {
		b.buf = append(b.buf, `{"type":"event","payload":`...)
		b.buf = p.emitter.Append(b.buf, it.Record())
		b.buf = append(b.buf, '}', '\n')
		b.ends = append(b.ends, len(b.buf))
		b.ids = append(b.ids, it.Record().ID)
		if len(b.ends) >= batchLines || len(b.buf) >= batchBytes {
			if !send() {
				p.free <- b // keep the stream's batches whole
				_ = it.Close()
				return
			}
			if !take() {
				_ = it.Close()
				return
			}
		}
	}
	b.err = it.Close()
	if len(b.ends) > 0 || b.err != nil {
		if !send() {
			p.free <- b
		}
		return
	}
	p.free <- b
}

// batches delivers the formatted batches; give each back with recycle.
func (p *prefetch) batches() <-chan *lineBatch { return p.full }

// recycle returns a written batch for reuse.
func (p *prefetch) recycle(b *lineBatch) { p.free <- b }

// stop ends the read and waits until its goroutine is done and every batch
// it holds is back; batches still queued are taken back too.
func (p *prefetch) stop() {
	close(p.done)
	<-p.ended
	for b := range p.full {
		p.free <- b
	}
}
