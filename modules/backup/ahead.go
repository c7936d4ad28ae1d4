package backup

import (
	"github.com/eventstore-service/eventstore/modules/store/restore"
)

// A chunk ReadAhead hands over holds aheadChunk items or, of larger events,
// aheadBytes of records; aheadChunks of them wait at most.
const (
	aheadChunk  = 1024
	aheadBytes  = 4 << 20
	aheadChunks = 4
)

// chunk is a run of items read ahead, with the bytes of their records.
type chunk struct {
	items []restore.Item
	err   error // ends the source after the items
}

// ahead is a restore.Source that reads and proves the lines of a Reader in
// a goroutine of its own, so that proving the next lines and committing the
// last ones work in parallel.
type ahead struct {
	chunks  chan chunk
	current []restore.Item
	err     error
	stop    chan struct{}
}

// ReadAhead returns a restore.Source over r that reads up to a few thousand
// items (and at most some 20 MiB of records) ahead in a goroutine of its
// own; Close stops it.
func ReadAhead(r *Reader) interface {
	restore.Source
	Close()
} {
	a := &ahead{chunks: make(chan chunk, aheadChunks), stop: make(chan struct{})}
	go a.run(r)
	return a
}

func (a *ahead) run(r *Reader) {
	defer close(a.chunks)
	for {
		c := chunk{items: make([]restore.Item, 0, aheadChunk)}
		var buf []byte
		for len(c.items) < aheadChunk && len(buf) < aheadBytes {
			item, err := r.Next()
			if err != nil {
				c.err = err
				break
			}
			if item.Event != nil { // the Reader reuses its record's bytes
				w := *item.Event
				start := len(buf)
				buf = append(buf, w.Record.JSON...)
				w.Record.JSON = buf[start:len(buf):len(buf)]
				item.Event = &w
			}
			c.items = append(c.items, item)
		}
		select {
		case a.chunks <- c:
		case <-a.stop:
			return
		}
		if c.err != nil {
			return
		}
	}
}

// Next returns the next item.
func (a *ahead) Next() (restore.Item, error) {
	for len(a.current) == 0 {
		if a.err != nil {
			return restore.Item{}, a.err
		}
		c, ok := <-a.chunks
		if !ok {
			return restore.Item{}, a.err
		}
		a.current, a.err = c.items, c.err
	}
	item := a.current[0]
	a.current = a.current[1:]
	return item, nil
}

// Close stops reading ahead: the goroutine ends at its next item, or when
// the reader's input ends.
func (a *ahead) Close() { close(a.stop) }
