package eventapi

import (
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
)

// Limits of the read-ahead of a stream: lines are formatted in batches of
// up to batchLines lines or batchBytes bytes, and at most prefetchBatches
// batches exist per stream, so memory stays flat whatever the result size.
const (
	batchLines      = 256
	batchBytes      = 64 << 10
	prefetchBatches = 4
)

// lineBatch holds complete NDJSON lines, one after the other.
type lineBatch struct {
	buf  []byte
	ends []int // end offset of each line in buf
	err  error // set on the last batch if the iterator failed
}

// lines calls write for every line of the batch in order; it stops at
// write's first error.
func (b *lineBatch) lines(write func(line []byte) error) error {
	start := 0
	for _, end := range b.ends {
		if err := write(b.buf[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// prefetcher formats the event lines of an iterator in a goroutine of its
// own, ahead of the goroutine that writes them to the client, so that the
// store and the network are worked on in parallel.
type prefetcher struct {
	full  chan *lineBatch
	free  chan *lineBatch
	done  chan struct{}
	ended chan struct{}
}

// prefetchEvents starts reading it; the caller must call stop when done,
// which also waits for the iterator to be closed.
func prefetchEvents(it store.RecordIterator, emitter *event.Emitter) *prefetcher {
	p := &prefetcher{
		full:  make(chan *lineBatch, prefetchBatches),
		free:  make(chan *lineBatch, prefetchBatches),
		done:  make(chan struct{}),
		ended: make(chan struct{}),
	}
	for i := 0; i < prefetchBatches; i++ {
		p.free <- &lineBatch{buf: make([]byte, 0, batchBytes), ends: make([]int, 0, batchLines)}
	}
	go p.run(it, emitter)
	return p
}

func (p *prefetcher) run(it store.RecordIterator, emitter *event.Emitter) {
	defer close(p.ended)
	defer close(p.full)
	var b *lineBatch
	take := func() bool {
		select {
		case b = <-p.free:
			b.buf, b.ends, b.err = b.buf[:0], b.ends[:0], nil
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
		b.buf = emitter.Append(b.buf, it.Record())
		b.buf = append(b.buf, '}', '\n')
		b.ends = append(b.ends, len(b.buf))
		if len(b.ends) >= batchLines || len(b.buf) >= batchBytes {
			if !send() || !take() {
				_ = it.Close()
				return
			}
		}
	}
	b.err = it.Close()
	if len(b.ends) > 0 || b.err != nil {
		send()
	}
}

// batches delivers the formatted batches; give each back with recycle.
func (p *prefetcher) batches() <-chan *lineBatch { return p.full }

// recycle returns a written batch for reuse.
func (p *prefetcher) recycle(b *lineBatch) { p.free <- b }

// stop ends the read-ahead and waits until the iterator is closed.
func (p *prefetcher) stop() {
	close(p.done)
	<-p.ended
}
