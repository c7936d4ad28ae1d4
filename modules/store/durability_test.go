package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/store"
	"github.com/eventstore-service/eventstore/modules/store/pebblestore"
	"github.com/eventstore-service/eventstore/modules/store/storetest"
)

// TestPowerLoss writes concurrently, takes crash images of the file system
// (keeping a random share of the unsynced data) and checks that every event
// acknowledged before the image was taken survives in it, unchanged, with
// the store opening cleanly and its chain intact.
func TestPowerLoss(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 0))
			fs := vfs.NewCrashableMem()
			s := storetest.Start(t, storetest.PebbleAt("data", fs))

			var (
				mu    sync.Mutex
				acked []event.Record
			)
			stop := storetest.Loop(8, func(w, i int) bool {
				n := 1 + i%4
				cs := make([]event.Candidate, n)
				for j := range cs {
					cs[j] = candidate(fmt.Sprintf("/writer/%d", w), "io.example.written", fmt.Sprintf(`{"i":%d,"j":%d,"pad":"%s"}`, i, j, strings.Repeat("x", i%200)))
				}
				records, err := s.Write(context.Background(), cs, nil)
				if err != nil {
					t.Errorf("write: %v", err)
					return false
				}
				mu.Lock()
				for _, r := range records {
					acked = append(acked, event.Record{ID: r.ID, JSON: bytes.Clone(r.JSON)})
				}
				mu.Unlock()
				return true
			})

			var images []*vfs.MemFS
			var ackedAtImage [][]event.Record
			for i := 0; i < 3; i++ {
				time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
				mu.Lock()
				snapshot := append([]event.Record(nil), acked...)
				mu.Unlock()
				images = append(images, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}))
				ackedAtImage = append(ackedAtImage, snapshot)
			}
			stop()
			storetest.Close(t, s)

			for i, image := range images {
				recovered := storetest.Start(t, storetest.PebbleAt("data", image))
				n := checkChain(t, recovered)
				for _, want := range ackedAtImage[i] {
					it, err := recovered.Read(store.ReadOptions{Subject: "/", Recursive: true, Lower: &store.Bound{ID: want.ID, Inclusive: true}, Upper: &store.Bound{ID: want.ID, Inclusive: true}})
					if err != nil {
						t.Fatal(err)
					}
					if !it.Next() || !bytes.Equal(it.Record().JSON, want.JSON) {
						it.Close()
						t.Fatalf("image %d: acknowledged event %d lost or changed (store has %d events)", i, want.ID, n)
					}
					it.Close()
				}
				if uint64(len(ackedAtImage[i])) > n {
					t.Fatalf("image %d: %d events acknowledged, %d recovered", i, len(ackedAtImage[i]), n)
				}
				// The recovered store takes writes again, continuing the chain.
				write(t, recovered, candidate("/after", "io.example.written", `{}`))
				checkChain(t, recovered)
				storetest.Close(t, recovered)
			}
		})
	}
}

// faultyFS returns a memory file system whose WAL operations of the given
// kinds fail with err while the returned toggle is on.
func faultyFS(err error, kinds ...errorfs.OpKind) (*errorfs.FS, *errorfs.Toggle) {
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if slices.Contains(kinds, op.Kind) && strings.HasSuffix(op.Path, ".log") {
			return err
		}
		return nil
	})}
	return errorfs.Wrap(vfs.NewMem(), toggle), toggle
}

func TestSyncFailureStopsWrites(t *testing.T) {
	fs, toggle := faultyFS(errorfs.ErrInjected, errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo)
	s := storetest.Start(t, storetest.PebbleAt("data", fs))
	first := write(t, s, candidate("/a", "io.example.x", `{"n":1}`))

	toggle.On()
	_, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{"n":2}`)}, nil)
	var failure *store.FailureError
	if !errors.As(err, &failure) || failure.Full || !errors.Is(err, store.ErrStorageFailure) {
		t.Fatalf("write with a failing sync: %v", err)
	}
	toggle.Off()

	// Fail-stop: later writes fail at once, even though the disk works again.
	for i := 0; i < 3; i++ {
		if _, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{}`)}, nil); !errors.Is(err, store.ErrStorageFailure) {
			t.Fatalf("write after the failure: %v", err)
		}
	}
	if s.Failure() == nil || s.Durable() != 1 {
		t.Fatalf("failure %v, durable %d", s.Failure(), s.Durable())
	}
	if s.Writable() {
		t.Fatal("the store reports itself writable after the failure")
	}
	// Durable data stays readable.
	it, err := s.Read(store.ReadOptions{Subject: "/a"})
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() || !bytes.Equal(it.Record().JSON, first[0].JSON) || it.Next() {
		t.Fatal("durable events not readable after the failure")
	}
	it.Close()
	_ = s.Close(context.Background())
}

func TestDiskFullIsReportedAsFull(t *testing.T) {
	fs, toggle := faultyFS(syscall.ENOSPC, errorfs.OpFileWrite, errorfs.OpFileWriteAt)
	s := storetest.Start(t, storetest.PebbleAt("data", fs))
	write(t, s, candidate("/a", "io.example.x", `{}`))
	toggle.On()
	_, err := s.Write(context.Background(), []event.Candidate{candidate("/a", "io.example.x", `{}`)}, nil)
	var failure *store.FailureError
	if !errors.As(err, &failure) || !failure.Full {
		t.Fatalf("write on a full disk: %v", err)
	}
	_ = s.Close(context.Background())
}

// TestReadFailureFailsTheWholeGroup injects read faults into Pebble's
// tables while the writer checks a group: the request whose precondition
// needs the failing read, the one before it and the one after it all get the
// storage failure, none of them is committed, and the store refuses writes
// until restart (docs/reference.md §7 point 4).
func TestReadFailureFailsTheWholeGroup(t *testing.T) {
	var failReads atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failReads.Load() && (op.Kind == errorfs.OpFileRead || op.Kind == errorfs.OpFileReadAt) && strings.HasSuffix(op.Path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	// A tiny memtable flushes early events to tables; no block cache, so
	// that every read of them reaches the file system.
	open := func() (store.Backend, error) {
		return pebblestore.Open("data", zap.NewNop(), pebblestore.Options{FS: fs, CacheSize: 1, MemTableSize: 256 << 10})
	}
	start := func() *store.Store {
		s := store.New(open, zap.NewNop(), nil, store.Memory{})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	write(t, s, candidate("/old", "io.example.x", `{}`))
	filler := strings.Repeat("f", 1000)
	for i := 0; i < 40; i++ {
		batch := make([]event.Candidate, 50)
		for j := range batch {
			batch[j] = candidate("/filler", "io.example.x", `{"pad":"`+filler+`"}`)
		}
		write(t, s, batch...)
	}
	// Wait until /old is read from a table, not from a memtable.
	deadline := time.Now().Add(20 * time.Second)
	for {
		failReads.Store(true)
		_, _, err := s.LatestID("/old", "io.example.x")
		failReads.Store(false)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/old never reached a table")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A restart, so that the writer knows nothing of /old but what storage says.
	storetest.Close(t, s)
	s = start()
	defer s.Close(context.Background())
	write(t, s, candidate("/new/0", "io.example.x", `{}`))
	durable := s.Durable() - 1

	// One request holds the writer; three queue behind it as one group:
	// a plain write, one whose precondition reads /old, a plain write.
	results := make([]chan error, 4)
	send := func(i int, pre []store.Precondition) {
		results[i] = make(chan error, 1)
		go func() {
			_, err := s.Write(context.Background(), []event.Candidate{candidate(fmt.Sprint("/new/", i), "io.example.x", `{}`)}, pre)
			results[i] <- err
		}()
	}
	release := holdWriter(t, s)
	send(1, nil)
	time.Sleep(100 * time.Millisecond)
	send(2, []store.Precondition{{Kind: store.SubjectPopulated, Subject: "/old"}})
	time.Sleep(100 * time.Millisecond)
	send(3, nil)
	time.Sleep(100 * time.Millisecond)
	failReads.Store(true)
	release()
	for i := 1; i <= 3; i++ {
		if err := <-results[i]; !errors.Is(err, store.ErrStorageFailure) {
			t.Fatalf("request %d of the failing group: %v, want the storage failure", i, err)
		}
	}
	failReads.Store(false)
	if s.Durable() != durable+1 || s.Writable() {
		t.Fatalf("after the failure: %d events (want %d), writable %v", s.Durable(), durable+1, s.Writable())
	}
	if _, err := s.Write(context.Background(), []event.Candidate{candidate("/later", "io.example.x", `{}`)}, nil); !errors.Is(err, store.ErrStorageFailure) {
		t.Fatalf("a later write: %v", err)
	}
	// After a restart the log ends with request 0: nothing of the group.
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = start()
	defer storetest.Close(t, s)
	if s.Durable() != durable+1 {
		t.Fatalf("after a restart: %d events, want %d", s.Durable(), durable+1)
	}
	for _, subject := range []string{"/new/1", "/new/2", "/new/3"} {
		if _, found, _ := s.LatestID(subject, "io.example.x"); found {
			t.Fatalf("%s was committed", subject)
		}
	}
}
