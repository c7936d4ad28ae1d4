package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
)

// checkpoints is a new kind of durable state, the worked example of
// docs/architecture.md: a consumer's position in the log, moved forward
// only, and committed in one write with the events the consumer emits.
type checkpoints struct{ s *store.Store }

// checkpointSpace is the space of feature state the checkpoints live in.
const checkpointSpace = "example.checkpoint"

// errBehind refuses a checkpoint that would move backwards.
var errBehind = errors.New("checkpoint behind the stored one")

// emit writes events and moves the consumer's checkpoint to position, both
// or neither; version is the checkpoint's version as the consumer read it
// (0: none yet), which fences out a second consumer of the same name.
func (c checkpoints) emit(ctx context.Context, consumer string, version, position uint64, events []event.Candidate) error {
	_, err := c.s.Commit(ctx, store.Request{
		Events: events,
		Changes: []store.Change{{
			Space: checkpointSpace, Key: consumer,
			Value: []byte(strconv.FormatUint(position, 10)), Expect: version,
		}},
		Check: func(g *store.Group) error {
			r, found, err := g.State(checkpointSpace, consumer)
			if err != nil || !found {
				return err
			}
			stored, err := strconv.ParseUint(string(r.Value), 10, 64)
			if err != nil {
				return err
			}
			if position < stored {
				return errBehind
			}
			return nil
		},
	})
	return err
}

// read returns the consumer's checkpoint and its version.
func (c checkpoints) read(consumer string) (position, version uint64, err error) {
	r, found, err := c.s.State(checkpointSpace, consumer)
	if err != nil || !found {
		return 0, 0, err
	}
	position, err = strconv.ParseUint(string(r.Value), 10, 64)
	return position, r.Version, err
}

func Example_featureState() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s := store.New(func() (store.Backend, error) {
		return pebblestore.Open(dir, zap.NewNop(), pebblestore.Options{})
	}, zap.NewNop(), nil, store.Memory{})
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	defer s.Close(context.Background())

	ctx := context.Background()
	c := checkpoints{s: s}
	reply := []event.Candidate{{Source: "https://example.com", Subject: "/orders/1", Type: "io.example.shipped", Data: []byte(`{}`)}}
	fmt.Println(c.emit(ctx, "shipping", 0, 41, reply))
	position, version, _ := c.read("shipping")
	fmt.Println(position, s.Durable())
	// A second worker that read no checkpoint is fenced out, events and all.
	var conflict *store.StateConflictError
	fmt.Println(errors.As(c.emit(ctx, "shipping", 0, 42, reply), &conflict), s.Durable())
	fmt.Println(c.emit(ctx, "shipping", version, 40, nil))
	// Output:
	// <nil>
	// 41 1
	// true 1
	// checkpoint behind the stored one
}
