package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/eventstore-service/eventstore/modules/dataindex"
	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/schema"
)

// The writer goroutine commits the queue in groups. Each group passes four
// phases, one method each:
//
//  1. admit: once the commit began, admit takes the requests waiting
//     behind the first;
//  2. check and seal: prepare decides every request of the group in order
//     against the committed state plus the requests accepted before it in
//     the group, and seals the records of the accepted ones;
//  3. persist: one atomic, synced backend commit of everything accepted;
//  4. publish: the new head becomes durable and visible, and every request
//     of the group gets its answer.
//
// A storage failure in any phase fails the whole group and every later one
// (fail-stop): nothing of the group is committed or acknowledged.

// run is the writer goroutine: it commits groups of queued writes until
// Close, and then the rest of the queue. On a shared backend it also
// follows the commits of other nodes, when told of them and every
// pollInterval.
func (s *Store) run() {
	defer close(s.stopped)
	var poll <-chan time.Time
	if s.shared {
		ticker := time.NewTicker(pollInterval)
		defer ticker.Stop()
		poll = ticker.C
	}
	for {
		if w := s.held; w != nil {
			s.held = nil
			s.writeGroup(w)
			continue
		}
		select {
		case w := <-s.queue:
			s.writeGroup(w)
		case w := <-s.retaken:
			s.writeGroup(w)
		case <-s.backend.Changes():
			s.followOthers()
		case <-poll:
			s.followOthers()
		case <-s.stop:
			for {
				if w := s.held; w != nil {
					s.held = nil
					s.writeGroup(w)
					continue
				}
				select {
				case w := <-s.queue:
					s.writeGroup(w)
				case w := <-s.retaken:
					s.writeGroup(w)
				default:
					return
				}
			}
		}
	}
}

// errWaiting refuses a write while the backend waits for its database.
var errWaiting = fmt.Errorf("%w: waiting for the database", ErrUnavailable)

// waitingPoll is how often refuseWhileWaiting looks whether the backend
// waits for its database.
const waitingPoll = 100 * time.Millisecond

// refuseWhileWaiting answers the requests in the queue with errWaiting
// while the backend waits for its database (it does not answer, or the
// writer looks up the outcome of a commit in it): nothing of them is
// stored, so their clients may retry at once instead of waiting as long as
// the database does. New requests are refused at enqueue then; these are
// the ones queued before. A request is taken from the queue by either this
// goroutine or the writer, never both.
func (s *Store) refuseWhileWaiting(w Waiter) {
	ticker := time.NewTicker(waitingPoll)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C:
		}
		for w.Waiting() {
			select {
			case req := <-s.queue:
				s.refuseOrHandOver(w, req)
			case <-ticker.C:
			case <-s.stop:
				return
			}
		}
	}
}

// refuseOrHandOver refuses req, taken from the queue by refuseWhileWaiting,
// if the backend still waits; if the wait ended while refuseWhileWaiting
// waited on the queue, req may have come after it (enqueue let it in), and
// the writer commits it (retaken). A store stopped meanwhile answers it
// with ErrClosed: nothing of it is stored.
func (s *Store) refuseOrHandOver(w Waiter, req *writeRequest) {
	if w.Waiting() {
		req.err = errWaiting
		close(req.done)
		return
	}
	select {
	case s.retaken <- req:
	case <-s.stopped:
		req.err = ErrClosed
		close(req.done)
	}
}

// writeGroup commits first and the writes waiting behind it, holding the
// writing lock.
func (s *Store) writeGroup(first *writeRequest) {
	s.writing.Lock()
	defer s.writing.Unlock()
	s.commit([]*writeRequest{first})
}

// followOthers reads the commits of other nodes, holding the writing lock.
func (s *Store) followOthers() {
	s.writing.Lock()
	defer s.writing.Unlock()
	s.followBackend()
}

// admit adds the writes waiting in the queue to group, up to
// MaxGroupEvents. It runs once the commit began, so that on a shared
// backend the writes queued while Begin waited for the other nodes join
// this commit. After a group of several requests, more are likely on their
// way: the writer first yields its processor to the goroutines ready to
// run, the handlers decoding requests, so that theirs join this group and
// one sync acknowledges more of them (docs/performance.md, "Larger
// groups"). Where nothing else is ready, the yield returns at once. An
// erasure is committed alone: it ends the group it would join, and the
// next group is its own.
func (s *Store) admit(group []*writeRequest) []*writeRequest {
	if group[0].erase != nil {
		s.lastGroup = 1
		return group
	}
	if s.lastGroup > 1 {
		runtime.Gosched()
	}
	events := 0
	for _, w := range group {
		events += len(w.Events)
	}
	for events < MaxGroupEvents {
		select {
		case w := <-s.queue:
			if w.erase != nil {
				s.held = w
				s.lastGroup = len(group)
				return group
			}
			group = append(group, w)
			events += len(w.Events)
		default:
			s.lastGroup = len(group)
			return group
		}
	}
	s.lastGroup = len(group)
	return group
}

// Retries of a group whose backend is unavailable (a database restarting,
// failing over): commitAttempts tries, the waits doubling from retryWait;
// none while the backend waits for its database (Waiter).
const (
	commitAttempts = 5
	retryWait      = 50 * time.Millisecond
)

// commit runs the phases for one group and answers every request of it
// (the group grows by the requests that arrived while it waited for the
// backend).
func (s *Store) commit(group []*writeRequest) {
	defer func() {
		for _, w := range group {
			close(w.done)
		}
	}()
	failAll := func(err error) {
		for _, w := range group {
			w.records, w.err = nil, err
		}
	}
	for attempt, wait := 1, retryWait; ; attempt, wait = attempt+1, wait*2 {
		if f := s.failure.Load(); f != nil {
			failAll(f)
			return
		}
		var err error
		group, err = s.commitOnce(group)
		switch {
		case err == nil:
			s.unreachable.Store(false)
			return
		case errors.Is(err, ErrRestoring):
			failAll(err)
			return
		case !errors.Is(err, ErrUnavailable):
			// The outcome is unknown, and requests that failed a
			// precondition were checked against writes that may not exist:
			// all get the failure.
			failAll(s.fail(err))
			return
		}
		s.unreachable.Store(true)
		if attempt == commitAttempts || s.backendWaiting() {
			// Nothing was stored: the clients may try again. A backend
			// that waits for its database would fail the attempts left.
			failAll(err)
			return
		}
		select {
		case <-time.After(wait):
		case <-s.stop:
			failAll(err)
			return
		}
	}
}

// commitOnce begins a commit, admits the waiting requests, follows what
// other nodes committed, checks and seals the group, commits it and
// publishes it; it returns the group as admitted. On an error nothing of
// the group was published.
func (s *Store) commitOnce(group []*writeRequest) (_ []*writeRequest, err error) {
	span := s.startCommit()
	defer func() { span.end(err) }()
	tx, err := s.backend.Begin(context.Background(), s.head.Count)
	if err != nil {
		return group, err
	}
	defer tx.Rollback()
	group = s.admit(group)
	span.admitted(group)
	if tx.Head().Restoring { // another node restores a backup
		return group, ErrRestoring
	}
	if err := s.follow(tx.Head(), tx.Followed(), txSpaces(tx)); err != nil {
		return group, err
	}
	g, err := s.prepare(group)
	if err != nil {
		return group, err
	}
	start := time.Now()
	if !g.empty() {
		b := Batch{Records: g.written, State: g.state, Head: g.head, Postings: g.postings, Backfill: g.backfill, Dropped: g.dropped,
			Erased: g.erased, Unposted: g.unposted}
		if err := tx.Commit(b); err != nil {
			return group, err
		}
		span.synced(time.Since(start))
	}
	s.publish(g, start)
	return group, nil
}

// groupState is a commit group being checked and sealed: the head it
// extends the log to, and what its accepted requests add.
type groupState struct {
	head       Head
	lastHash   []byte
	buf        []byte // the records' JSON, one after the other
	written    []Written
	latest     map[string]uint64         // subject → latest id written in the group
	state      []StateRecord             // the changes of feature state, one per record
	changed    map[stateKey]int          // index in state of each record changed
	spaces     map[string]int            // changes accepted by space
	registered map[string]*schema.Schema // schemas registered in the group
	readOnly   bool                      // a request of the group entered read-only mode
	accepted   []*writeRequest
	// indexes are the data indexes the group's events are keyed for:
	// the committed ones, and those registered or removed in the group
	// before them; postings are the keys of the group's events, backfill
	// those of earlier events that builds add, and dropped the indexes
	// removed in the group, whose postings go.
	indexes  []*DataIndex
	postings []Posting
	backfill []Posting
	dropped  []uint64
	keys     []dataindex.Key // of the group's events, which their Keyed hold
	// erased are the events an erasure of the group erased, unposted
	// their keys in the data indexes.
	erased   []ErasedRecord
	unposted []Posting
}

func (g *groupState) empty() bool {
	return len(g.written) == 0 && len(g.state) == 0 && len(g.backfill) == 0 && len(g.dropped) == 0 && len(g.erased) == 0
}

// prepare decides every request of the group: a refused request gets its
// error, an accepted one its sealed records. It returns an error, and
// decides nothing more, when storage fails. It changes nothing but the
// group and its requests: what the group does to the store happens once
// it is durable (publish).
func (s *Store) prepare(group []*writeRequest) (*groupState, error) {
	size := 0
	for _, w := range group {
		w.records, w.err = nil, nil // a retried group is decided afresh
		for _, c := range w.Events {
			size += len(c.Data) + len(c.Source) + len(c.Subject) + len(c.Type) + 400
		}
	}
	g := &groupState{
		head:       s.head.next(),
		lastHash:   []byte(s.head.LastHash),
		buf:        make([]byte, 0, size),
		latest:     map[string]uint64{},
		changed:    map[stateKey]int{},
		spaces:     map[string]int{},
		registered: map[string]*schema.Schema{},
		indexes:    s.dataIndexes.current().sorted,
	}
	for _, w := range group {
		err := s.check(w, g)
		var failure *FailureError
		switch {
		case errors.As(err, &failure):
			return nil, failure.Err
		case err != nil:
			w.err = err
			continue
		}
		g.seal(w, s.now())
		if w.erase != nil {
			if err := g.sealErasure(w); err != nil {
				return nil, err
			}
		}
		g.backfill = append(g.backfill, w.backfill...)
		g.applyChanges(w.Changes)
		g.accepted = append(g.accepted, w)
	}
	g.head.LastHash = string(g.lastHash)
	return g, nil
}

// check decides one request against the committed state and the group so
// far: its events' schemas and preconditions, its changes' fences, its own
// rule. A storage failure comes back as a *FailureError.
func (s *Store) check(w *writeRequest, g *groupState) error {
	if w.erase != nil {
		if err := s.checkErasure(w, g); err != nil {
			return err
		}
	}
	if (s.readOnly.Load() || g.readOnly) && (!w.InReadOnly || len(w.Events) > 0) {
		return ErrReadOnly
	}
	if len(w.Events) > 0 {
		if w.schemaVersion != s.schemas.version.Load() || len(g.registered) > 0 {
			if err := validateCandidates(w.Events, g.schemaOf(s.schemas)); err != nil {
				return err
			}
		}
		if err := s.checkPreconditions(w, g); err != nil {
			return err
		}
	}
	if err := s.checkFences(w, g); err != nil {
		return err
	}
	if w.Check != nil {
		return w.Check(&Group{s: s, g: g})
	}
	return nil
}

// seal gives the candidates of an accepted write their ids, times and
// hashes, continuing the group's chain.
func (g *groupState) seal(w *writeRequest, now time.Time) {
	if len(w.Events) == 0 {
		return
	}
	w.records = make([]event.Record, len(w.Events))
	for i, c := range w.Events {
		t := event.NextTime(now, g.head.LastTime)
		var r event.Record
		g.buf, r = event.Seal(g.buf, c, g.head.Count, t, g.lastHash)
		w.records[i] = r
		var keyed []dataindex.Keyed
		for _, x := range g.indexes {
			if g.head.Count < x.From { // those below are the build's
				continue
			}
			start := len(g.keys)
			g.keys = x.Keys(g.keys, c.Type, c.Data)
			keys := g.keys[start:len(g.keys):len(g.keys)]
			for _, k := range keys {
				g.postings = append(g.postings, Posting{Index: x.ID, Key: k, ID: g.head.Count})
			}
			keyed = append(keyed, dataindex.Keyed{Index: x.ID, Keys: keys})
		}
		g.written = append(g.written, Written{Record: r, Subject: c.Subject, Type: c.Type, Keyed: keyed})
		g.latest[c.Subject] = g.head.Count
		g.lastHash = r.HashBytes()
		g.head.Count++
		g.head.LastTime = t
	}
}

// schemaOf returns the schema of a type: registered in the group, else committed.
func (g *groupState) schemaOf(committed *registry) func(string) *schema.Schema {
	return func(eventType string) *schema.Schema {
		if sch := g.registered[eventType]; sch != nil {
			return sch
		}
		return committed.get(eventType)
	}
}

// publish makes a committed group durable for readers, runs the accepted
// requests' Applied, and reports the group.
func (s *Store) publish(g *groupState, start time.Time) {
	done := time.Now()
	if !g.empty() {
		s.head = g.head
		// A commit of feature state alone wakes no observer (Changed), as
		// a followed one does not (follow): the feature that made it wakes
		// its own readers.
		s.recent.erase(g.erased)
		s.advance(g.written, len(g.written) > 0)
		s.rec.Committed(len(g.written), done.Sub(start))
		s.recordKeys(g)
	}
	for _, w := range g.accepted {
		if w.Applied != nil {
			w.Applied()
		}
		s.rec.Acknowledged(done.Sub(w.enqueued))
	}
}

// followBackend follows the backend's committed head outside a commit.
func (s *Store) followBackend() {
	if s.failure.Load() != nil {
		return
	}
	head, err := s.backend.Head()
	if err == nil && head.Restoring {
		return // another node restores a backup: nothing of it is visible yet
	}
	if err == nil {
		err = s.follow(head, nil, s.backend.ChangedSpaces)
	}
	switch {
	case err == nil:
		s.unreachable.Store(false)
	case errors.Is(err, ErrUnavailable):
		s.unreachable.Store(true)
	default:
		s.fail(err)
	}
}

// latest returns the id of the latest event of exactly subject, the
// group's writes included: from the group, else from the cache of the
// committed state, else from storage (then remembered).
func (s *Store) latest(subject string, g *groupState) (uint64, bool, error) {
	if id, ok := g.latest[subject]; ok {
		return id, true, nil
	}
	if id, found, known := s.latestIDs.get(subject); known {
		return id, found, nil
	}
	if s.head.Count == 0 {
		return 0, false, nil
	}
	id, found, err := s.backend.LatestID(subject, "", s.head.Count-1)
	if err == nil {
		s.latestIDs.put(subject, id, found)
	}
	return id, found, err
}

// fail stops the store for good and logs it once.
func (s *Store) fail(err error) *FailureError {
	f := newFailureError(err)
	if s.failure.CompareAndSwap(nil, f) {
		s.log.Error("storage failed, refusing writes", zap.Error(err), zap.Bool("diskFull", f.Full))
	}
	return s.failure.Load()
}
