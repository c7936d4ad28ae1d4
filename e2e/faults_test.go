package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// recoveryLimit is how soon after a fault heals every node must serve a
// write again: the lease timeout (10 s) and 5 s.
const recoveryLimit = 15 * time.Second

// faultSoakEnv names the environment variable that makes the random phase
// of TestFaults run for a duration (e.g. 30m) instead of a few faults.
const faultSoakEnv = "EVENTSTORE_FAULT_SOAK"

// faultSeedEnv names the environment variable that sets the seed of the
// faults' choices (which fault, which node, how long), for a rerun.
const faultSeedEnv = "EVENTSTORE_FAULT_SEED"

// TestFaults runs three PostgreSQL-mode nodes, each in a network namespace
// of its own, on one throw-away PostgreSQL 15 cluster with a synchronous
// standby, reached through a Toxiproxy proxy per node, under a workload of
// precondition writers, plain writers and an observer on every node. It
// injects faults one at a time, then a random sequence of them: a node cut
// off from the database (nftables), the database cut off from every node, a
// node paused with SIGSTOP, latency with jitter, a bandwidth limit and
// connection resets on the database links, the database paused with
// SIGSTOP, an immediate database restart, kill -9 of a node and a failover
// to the standby. After each fault heals every node must write again within
// recoveryLimit. At the end it checks the recorded history: acknowledged
// writes stored, refused ones absent, preconditions linearizable
// (porcupine, unknown outcomes as possibly happened), every observer's
// events gap-free and identical to the store, and verify clean.
func TestFaults(t *testing.T) {
	if err := faultNetAvailable(); err != nil {
		t.Skip(err)
	}
	soak := time.Duration(0)
	if v := os.Getenv(faultSoakEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", faultSoakEnv, v, err)
		}
		soak = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(faultSeedEnv); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("%s=%q: %v", faultSeedEnv, v, err)
		}
	}
	t.Logf("seed %d (%s=%d repeats the faults and their order)", seed, faultSeedEnv, seed)
	s := newFaultSuite(t, seed)
	began := time.Now()
	s.startWorkload()
	s.startReactors()
	t.Cleanup(func() { // every goroutine ends, also when the test fails early
		s.stopWriters()
		s.reactors.stop()
		s.stopObservers(0)
	})
	time.Sleep(2 * time.Second)

	// Each fault once, one at a time.
	for _, f := range s.faults() {
		s.inject(f, f.hold)
	}
	// Then a random sequence: a few faults in CI, or until the soak ends.
	all := s.faults()
	for n := 0; ; n++ {
		if soak == 0 && n == 10 || soak > 0 && time.Since(began) > soak {
			break
		}
		f := all[s.rng.IntN(len(all))]
		hold := f.hold
		if hold > 0 {
			hold = time.Duration(2000+s.rng.IntN(4000)) * time.Millisecond
		}
		s.inject(f, hold)
	}
	time.Sleep(time.Second)
	s.stopWriters()
	s.checkReactors()
	s.check(time.Since(began))
}

// faultSuite is the running topology and the workload of TestFaults.
type faultSuite struct {
	t       *testing.T
	rng     *rand.Rand
	db      *pgtest.Cluster // the primary
	standby *pgtest.Cluster // its synchronous standby
	dbURL   string          // the primary's database, for verify
	net     *faultNet
	proxies *dbProxies
	history *faultHistory
	windows []faultWindow

	mu      sync.Mutex
	nodes   []*harness.Instance
	started []*harness.Instance // every node started, replaced ones too
	pick    *rand.Rand

	writing     context.Context // ends the writers
	stopWriting context.CancelFunc
	ctx         context.Context // ends the observers
	cancel      context.CancelFunc
	writers     sync.WaitGroup
	observers   sync.WaitGroup

	reactorServers []*server // the node of each reactor, as it runs now
	reactors       *reactors
}

// newFaultSuite starts the database, the namespaces, the proxies and the
// three nodes.
func newFaultSuite(t *testing.T, seed uint64) *faultSuite {
	t.Helper()
	s := &faultSuite{t: t, rng: rand.New(rand.NewPCG(seed, 1)), pick: rand.New(rand.NewPCG(seed, 2)), history: newFaultHistory()}
	s.net = newFaultNet(t, 3) // removed last: its cleanup runs after the nodes'
	s.db = pgtest.New(t, pgtest.Options{})
	var err error
	if s.dbURL, err = s.db.CreateDatabase(context.Background(), "faults"); err != nil {
		t.Fatal(err)
	}
	if err := s.newStandby(); err != nil {
		t.Fatal(err)
	}
	var listen []string
	for _, l := range s.net.links {
		listen = append(listen, l.hostAddr)
	}
	s.proxies = newDBProxies(t, fmt.Sprintf("127.0.0.1:%d", s.db.Port()), listen)
	for i, l := range s.net.links {
		l.dbPort = s.proxies.port(i)
		s.nodes = append(s.nodes, s.startNode(i))
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.writing, s.stopWriting = context.WithCancel(s.ctx)
	return s
}

// startNode starts node i inside its namespace, on the database through
// its proxy, listening on its namespace address.
func (s *faultSuite) startNode(i int) *harness.Instance {
	l := s.net.links[i]
	url := fmt.Sprintf("postgres://postgres@%s:%d/faults?sslmode=disable", l.hostAddr, l.dbPort)
	args := harness.Postgres(url, "--http-address="+l.nsAddr)
	inst := harness.Start(s.t, "ip", l.exec(append([]string{bin}, args...)...)...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, inst)
	return inst
}

// newStandby gives the primary a new synchronous standby, removed when
// the test ends.
func (s *faultSuite) newStandby() error {
	standby, err := s.db.NewStandby()
	if err != nil {
		return fmt.Errorf("a standby of the database: %w", err)
	}
	s.t.Cleanup(func() {
		if err := standby.Remove(); err != nil {
			s.t.Error(err)
		}
	})
	s.standby = standby
	return nil
}

// failover stops the primary at once, promotes its synchronous standby and
// points the proxies at it, as a service name that always leads to the
// primary does.
func (s *faultSuite) failover() error {
	if err := s.db.Stop(pgtest.Immediate); err != nil {
		return fmt.Errorf("stop the primary: %w", err)
	}
	if err := s.standby.Promote(); err != nil {
		return fmt.Errorf("promote the standby: %w", err)
	}
	s.db, s.standby = s.standby, nil
	s.dbURL = s.db.URL("faults")
	return s.proxies.redirect(fmt.Sprintf("127.0.0.1:%d", s.db.Port()))
}

// node returns node i as it runs now.
func (s *faultSuite) node(i int) *harness.Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[i]
}

// Do sends a request to a random node (harness.Target).
func (s *faultSuite) Do(method, path, token, body string, header ...string) harness.Response {
	return s.node(s.randomNode()).Do(method, path, token, body, header...)
}

// URL returns the base URL of a random node (harness.Target).
func (s *faultSuite) URL(scheme string) string { return s.node(s.randomNode()).URL(scheme) }

// Nodes returns the nodes (harness.Target).
func (s *faultSuite) Nodes() []*harness.Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*harness.Instance(nil), s.nodes...)
}

func (s *faultSuite) randomNode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pick.IntN(len(s.nodes))
}

// fault is one kind of fault: inject starts it and returns the heal.
type fault struct {
	kind   string
	hold   time.Duration // how long it lasts in the first phase; 0: instant
	inject func() (heal func() error, err error)
}

// dbPauseHold is how long the database stays paused: beyond the 1 s in
// which a node gives up on a statement of a database that does not answer.
const dbPauseHold = 4 * time.Second

// faults returns every kind of fault, in the order of the first phase.
func (s *faultSuite) faults() []fault {
	noHeal := func() error { return nil }
	toxics := func(tx ...toxic) func() (func() error, error) {
		return func() (func() error, error) {
			for _, x := range tx {
				if err := s.proxies.add(x); err != nil {
					s.proxies.clear()
					return nil, err
				}
			}
			return func() error { s.proxies.clear(); return nil }, nil
		}
	}
	return []fault{
		{"node-db-partition", 5 * time.Second, func() (func() error, error) {
			l := s.net.links[s.rng.IntN(len(s.net.links))]
			return l.heal, l.partition()
		}},
		{"db-partition-all", 5 * time.Second, func() (func() error, error) {
			for _, l := range s.net.links {
				if err := l.partition(); err != nil {
					return s.healNet, err
				}
			}
			return s.healNet, nil
		}},
		{"node-sigstop", 11 * time.Second, func() (func() error, error) {
			node := s.node(s.rng.IntN(3))
			if err := syscall.Kill(node.Pid(), syscall.SIGSTOP); err != nil {
				return noHeal, fmt.Errorf("SIGSTOP node %d: %w", node.Pid(), err)
			}
			return func() error { return syscall.Kill(node.Pid(), syscall.SIGCONT) }, nil
		}},
		{"latency-jitter", 5 * time.Second, toxics(toxic{name: "latency", kind: "latency", attributes: `{"latency":150,"jitter":100}`})},
		{"bandwidth", 4 * time.Second, toxics(toxic{name: "bandwidth", kind: "bandwidth", attributes: `{"rate":32}`})},
		{"reset-peer", 3 * time.Second, toxics(toxic{name: "reset", kind: "reset_peer", stream: "upstream", attributes: `{"timeout":300}`})},
		{"timeout-limit-data", 3 * time.Second, toxics(
			toxic{name: "limit", kind: "limit_data", stream: "downstream", attributes: `{"bytes":20000}`},
			toxic{name: "timeout", kind: "timeout", stream: "upstream", attributes: `{"timeout":1500}`})},
		{"db-sigstop", dbPauseHold, func() (func() error, error) {
			if err := s.db.Pause(); err != nil {
				return s.db.Resume, fmt.Errorf("pause the database: %w", err)
			}
			return s.db.Resume, nil
		}},
		{"db-restart-immediate", 0, func() (func() error, error) {
			if err := s.db.Restart(pgtest.Immediate); err != nil {
				return noHeal, fmt.Errorf("restart the database: %w", err)
			}
			return noHeal, nil
		}},
		{"node-kill9", 0, func() (func() error, error) {
			i := s.rng.IntN(3)
			node := s.node(i)
			if err := syscall.Kill(node.Pid(), syscall.SIGKILL); err != nil {
				return noHeal, fmt.Errorf("kill -9 node %d: %w", i, err)
			}
			node.Wait(10 * time.Second)
			return func() error {
				inst := s.startNode(i)
				s.mu.Lock()
				s.nodes[i] = inst
				s.mu.Unlock()
				s.replaced(i)
				return nil
			}, nil
		}},
		{"db-failover", 0, func() (func() error, error) {
			// The heal: a new synchronous standby for the next failover.
			return s.newStandby, s.failover()
		}},
	}
}

// healNet removes every partition.
func (s *faultSuite) healNet() error {
	var errs []string
	for _, l := range s.net.links {
		if err := l.heal(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}

// inject runs one fault for hold, heals it and waits until every node
// wrote again, recording the window and the recovery time.
func (s *faultSuite) inject(f fault, hold time.Duration) {
	t := s.t
	t.Helper()
	w := faultWindow{kind: f.kind, start: s.history.now()}
	heal, err := f.inject()
	if err != nil {
		if heal != nil {
			_ = heal()
		}
		t.Fatalf("inject %s: %v", f.kind, err)
	}
	time.Sleep(hold)
	healed := time.Now()
	if err := heal(); err != nil {
		t.Fatalf("heal %s: %v", f.kind, err)
	}
	w.recovery = s.awaitWrites(f.kind, healed)
	w.end = s.history.now()
	s.windows = append(s.windows, w)
	t.Logf("%s: held %s, every node wrote again %s after the heal", f.kind, hold.Round(time.Millisecond), w.recovery.Round(time.Millisecond))
	time.Sleep(time.Second) // the workload runs undisturbed for a moment
}

// awaitWrites sends probe writes to every node until each answered 200 and
// returns how long the slowest took from healed; a node that did not within
// recoveryLimit fails the test.
func (s *faultSuite) awaitWrites(kind string, healed time.Time) time.Duration {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
		late    []string
	)
	for i := range s.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 3 * time.Second}
			defer client.CloseIdleConnections()
			for n := 0; ; n++ {
				req := fmt.Sprintf("probe/%s/%d/%d/%d", kind, len(s.windows), i, n)
				rec := s.history.write(client, i, s.node(i).URL("http"), req, plainBody("/faults/probe", req, 1), 1, nil, -1)
				took := time.Since(healed)
				if rec.outcome == outcomeOK {
					mu.Lock()
					slowest = max(slowest, took)
					mu.Unlock()
					return
				}
				if took > recoveryLimit {
					mu.Lock()
					late = append(late, fmt.Sprintf("node %d (last answer %s)", i, rec.answer))
					mu.Unlock()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if len(late) > 0 {
		s.t.Fatalf("after %s healed, %s served no write within %s", kind, strings.Join(late, ", "), recoveryLimit)
	}
	return slowest
}

// plainBody is a write of n events on subject with request key req.
func plainBody(subject, req string, n int) string {
	var parts []string
	for j := 0; j < n; j++ {
		parts = append(parts, fmt.Sprintf(`{"source":"https://faults.example.com","subject":%q,"type":"io.example.faults","data":{"req":%q,"j":%d}}`, subject, req, j))
	}
	return `{"events":[` + strings.Join(parts, ",") + `]}`
}

// Workload sizes: small, the machine has two cores and shares them.
const (
	faultLinClients   = 8
	faultPlainWriters = 3
	faultLinSubjects  = 3  // shared by the precondition clients at a time
	faultLinEpoch     = 40 // operations before the clients move to fresh subjects
)

// startWorkload starts the precondition clients, the plain writers and an
// observer on every node.
func (s *faultSuite) startWorkload() {
	seed := s.rng.Uint64()
	for id := 0; id < faultLinClients; id++ {
		s.writers.Add(1)
		go func() {
			defer s.writers.Done()
			s.runLinClient(id, seed)
		}()
	}
	for w := 0; w < faultPlainWriters; w++ {
		s.startWriter(func(n int) (string, string, int) {
			return fmt.Sprintf("plain/%d/%d", w, n), fmt.Sprintf("/faults/plain/%d", w), 1 + n%4
		})
	}
	for i := range s.Nodes() {
		rec := &observerRecord{node: i}
		s.history.mu.Lock()
		s.history.observers = append(s.history.observers, rec)
		s.history.mu.Unlock()
		s.observers.Add(1)
		go func() {
			defer s.observers.Done()
			s.runObserver(rec)
		}()
	}
}

// startWriter starts a writer that, until the workload stops, writes
// request n (its key, subject and number of events as of returns) to a
// random node every 20 ms, each recorded in the history.
func (s *faultSuite) startWriter(of func(n int) (req, subject string, events int)) {
	s.writers.Add(1)
	go func() {
		defer s.writers.Done()
		client := &http.Client{Timeout: 5 * time.Second}
		defer client.CloseIdleConnections()
		for n := 0; s.writing.Err() == nil; n++ {
			req, subject, events := of(n)
			node := s.randomNode()
			s.history.write(client, node, s.node(node).URL("http"), req, plainBody(subject, req, events), events, nil, -1)
			sleepCtx(s.writing, 20*time.Millisecond)
		}
	}()
}

// runLinClient runs one precondition client until the workload stops: the
// operations of the linearizability test (linClient), each recorded with
// its outcome, unknown ones included.
func (s *faultSuite) runLinClient(id int, seed uint64) {
	httpClient := &http.Client{Timeout: 5 * time.Second}
	defer httpClient.CloseIdleConnections()
	c := &linClient{id: id, http: httpClient, target: s, rng: rand.New(rand.NewPCG(seed, uint64(id))), known: map[string]int64{}}
	k := 0
	for n := 0; s.writing.Err() == nil; n++ {
		if n%faultLinEpoch == 0 || c.rng.IntN(2) == 0 {
			k = c.rng.IntN(faultLinSubjects)
		}
		subject := fmt.Sprintf("/faults/lin/%d/%d", n/faultLinEpoch, k)
		in := casInput{Subject: subject, Kind: c.pick()}
		switch {
		case in.Kind.isRead():
			call := s.history.now()
			out, _, err := c.read(in)
			if err == nil {
				s.history.read(porcupineOp(id, in, out, call, s.history.now()))
				c.known[subject] = out.Latest
			}
		default:
			if latest, ok := c.known[subject]; ok && latest >= 0 && (in.Kind == casOnEventID || in.Kind == casOnEventIDQL) {
				in.Expect = latest
			} // else 0: refused unless the subject's only event is the store's first
			req := fmt.Sprintf("lin/%d/%d", id, n)
			events := 1 + c.rng.IntN(2)
			node := s.randomNode()
			rec := s.history.write(httpClient, node, s.node(node).URL("http"), req, linBody(in, req, events), events, &in, id)
			if rec.outcome == outcomeOK {
				c.known[subject] = idOf(rec.events[len(rec.events)-1])
			}
		}
		sleepCtx(s.writing, 10*time.Millisecond)
	}
}

// porcupineOp is a read of a precondition client for porcupine.
func porcupineOp(client int, in casInput, out casOutput, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// linBody is the write of in: events of linType on its subject, each with
// request key req, with in's precondition.
func linBody(in casInput, req string, n int) string {
	events := make([]map[string]any, n)
	for j := range events {
		events[j] = map[string]any{"source": "https://faults.example.com", "subject": in.Subject, "type": linType, "data": map[string]any{"req": req, "j": j}}
	}
	body := map[string]any{"events": events}
	if p := precondition(in); p != nil {
		body["preconditions"] = []any{p}
	}
	raw, _ := json.Marshal(body)
	return string(raw)
}

// runObserver observes every event from id 0 on its node until the
// workload stops; a stream that breaks, or stays silent for 5 s (a
// heartbeat comes every second), is opened again from the next id.
func (s *faultSuite) runObserver(rec *observerRecord) {
	for s.ctx.Err() == nil {
		next := int64(0)
		s.history.mu.Lock()
		next = int64(len(rec.events))
		s.history.mu.Unlock()
		body := `{"subject":"/","options":{"recursive":true}}`
		if next > 0 {
			body = fmt.Sprintf(`{"subject":"/","options":{"recursive":true,"lowerBound":{"id":"%d","type":"inclusive"}}}`, next)
		}
		if err := s.observeOnce(rec, s.node(rec.node).URL("http"), body, next); err != nil {
			s.history.mu.Lock()
			rec.problems = append(rec.problems, err.Error())
			s.history.mu.Unlock()
			return
		}
		s.history.mu.Lock()
		rec.reconnects++
		s.history.mu.Unlock()
		sleepCtx(s.ctx, 200*time.Millisecond)
	}
}

// observeOnce reads one observe-events stream from next into rec until it
// ends, breaks or stalls; it returns an error only for a violation of the
// stream's contract (an event out of order, a malformed line).
func (s *faultSuite) observeOnce(rec *observerRecord, url, body string, next int64) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/api/v1/observe-events", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("observe request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+harness.Token)
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil // the node is unreachable or stalled: again later
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil // 503 while the database is unreachable
	}
	lines := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-done }()
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
			if !ok {
				return nil
			}
		case <-time.After(5 * time.Second):
			return nil
		case <-ctx.Done():
			return nil
		}
		var l ndjsonLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return fmt.Errorf("malformed line %q", line)
		}
		switch l.Type {
		case "heartbeat":
		case "error":
			return nil // the stream ended, e.g. storage unreachable
		case "event":
			var e struct {
				ID   string `json:"id"`
				Hash string `json:"hash"`
			}
			if err := json.Unmarshal(l.Payload, &e); err != nil {
				return fmt.Errorf("malformed event %s", l.Payload)
			}
			var id int64
			if _, err := fmt.Sscan(e.ID, &id); err != nil || id != next {
				return fmt.Errorf("received id %s after %d events, want %d", e.ID, next, next)
			}
			s.history.mu.Lock()
			rec.events = append(rec.events, obsEvent{id: id, hash: e.Hash})
			s.history.mu.Unlock()
			next++
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
}

// observed returns how many events the observers received, the fewest.
func (s *faultSuite) observed() int {
	s.history.mu.Lock()
	defer s.history.mu.Unlock()
	least := -1
	for _, o := range s.history.observers {
		if least < 0 || len(o.events) < least {
			least = len(o.events)
		}
	}
	return least
}

// stopWriters stops the writers and waits for them.
func (s *faultSuite) stopWriters() {
	s.stopWriting()
	s.writers.Wait()
}

// stopObservers lets the observers catch up with a store of total events
// for up to 30 s, then stops them and waits for them.
func (s *faultSuite) stopObservers(total int) {
	for deadline := time.Now().Add(30 * time.Second); s.observed() < total && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	s.cancel()
	s.observers.Wait()
}

// check runs the checkers and prints the summary.
func (s *faultSuite) check(elapsed time.Duration) {
	t := s.t
	t.Helper()
	lines := stream(t, s, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)
	s.stopObservers(len(lines))
	store := make([]storedEvent, len(lines))
	acked := map[string]string{}
	for i, l := range lines {
		store[i] = parseEvent(t, l.Payload)
	}
	s.history.mu.Lock()
	for _, w := range s.history.writes {
		for _, e := range w.events {
			acked[e.ID] = string(e.raw)
		}
	}
	s.history.mu.Unlock()
	total := checkStore(t, s, acked) // contiguous ids, the chain, acknowledged events byte for byte
	verifyClean(t, total, "--postgres-url="+s.dbURL)
	artifacts := sync.OnceValue(func() string { return artifactDir(t) }) // one directory for every artifact
	report := checkFaultHistory(s.history, store[:total], artifacts)
	found := report.anomalies
	rows := summarize(s.history, s.windows, report)
	table := formatSummary(rows)
	s.history.mu.Lock()
	var reconnects []string
	for _, o := range s.history.observers {
		reconnects = append(reconnects, fmt.Sprintf("node %d: %d", o.node, o.reconnects))
	}
	s.history.mu.Unlock()
	t.Logf("%d events stored; run took %s; observer reconnects %s\n%s",
		total, elapsed.Round(time.Second), strings.Join(reconnects, ", "), table)
	if dir := os.Getenv("E2E_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "faults-summary.txt"), []byte(table), 0o644)
		}
	}
	var timeline []string
	for _, w := range s.windows {
		timeline = append(timeline, fmt.Sprintf("%s %s-%s", w.kind, time.Duration(w.start).Round(time.Millisecond), time.Duration(w.end).Round(time.Millisecond)))
	}
	t.Logf("faults (from injection until every node wrote again): %s", strings.Join(timeline, ", "))
	if len(found) > 0 {
		dir := artifacts()
		s.mu.Lock()
		for i, inst := range s.started {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("node-%d.log", i)), []byte(inst.Stdout()), 0o644)
		}
		s.mu.Unlock()
		t.Logf("the logs of every node started are in %s", dir)
	}
	for i, a := range found {
		if i == 20 {
			t.Errorf("and %d more anomalies", len(found)-20)
			break
		}
		at := "whole history"
		if a.at >= 0 {
			at = time.Duration(a.at).Round(time.Millisecond).String()
		}
		t.Errorf("anomaly (%s): %s", at, a.msg)
	}
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
