package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// TestPostgresContention races writers on three nodes for the same subjects
// with isSubjectOnEventId: in every round, racers on random nodes all expect
// the subject's latest event and exactly one of them wins. Afterwards the
// log is contiguous and chained, each subject holds exactly its winners, and
// eventstore verify finds the database clean.
func TestPostgresContention(t *testing.T) {
	const subjects, rounds, racers = 4, 25, 9
	url := pg.Database(t)
	cluster := harness.StartCluster(t, bin, 3, harness.Postgres(url)...)
	var (
		mu    sync.Mutex
		acked = map[string]string{}
		wg    sync.WaitGroup
	)
	for s := 0; s < subjects; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := fmt.Sprintf("/contended/%d", s)
			client := &http.Client{Timeout: 20 * time.Second}
			defer client.CloseIdleConnections()
			var chain []string // the subject's events: the first, then each round's winner
			for r := 0; r <= rounds; r++ {
				precondition, n := "", racers
				if r == 0 {
					n = 1
				} else {
					precondition = fmt.Sprintf(`,"preconditions":[{"type":"isSubjectOnEventId","payload":{"subject":%q,"eventId":%q}}]`, subject, chain[len(chain)-1])
				}
				body := fmt.Sprintf(`{"events":[{"source":"https://x","subject":%q,"type":"io.example.claimed","data":{"round":%d}}]%s}`, subject, r, precondition)
				winners, err := race(client, cluster, body, n)
				if err != nil || len(winners) != 1 {
					t.Errorf("%s round %d expecting %v: %d winners, %v", subject, r, chain[max(0, len(chain)-1):], len(winners), err)
					return
				}
				chain = append(chain, winners[0].ID)
				mu.Lock()
				acked[winners[0].ID] = string(winners[0].raw)
				mu.Unlock()
			}
			if got := readIDs(t, cluster, fmt.Sprintf(`{"subject":%q}`, subject)); got != strings.Join(chain, ",") {
				t.Errorf("%s holds %s, the winners were %s", subject, got, strings.Join(chain, ","))
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if total := checkStore(t, cluster, acked); total != subjects*(rounds+1) {
		t.Fatalf("%d events stored, %d won", total, subjects*(rounds+1))
	}
	verifyClean(t, subjects*(rounds+1), "--postgres-url="+url)
}

// race sends body n times at once, each to a random node, and returns the
// events of the 200 answers; an answer other than 200 or 409 is an error.
func race(client *http.Client, target harness.Target, body string, n int) ([]storedEvent, error) {
	var (
		mu      sync.Mutex
		winners []storedEvent
		errs    []error
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := target.URL("http") + "/api/v1/write-events"
			<-start
			events, err := postWrite(client, url, body)
			var status *statusError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, events...)
			case errors.As(err, &status) && status.code == 409 && status.body == "state conflict: precondition failed\n":
			default:
				errs = append(errs, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return winners, errors.Join(errs...)
}

// TestPostgresObserveOrder opens an observer on each of three nodes, writes
// concurrently on all nodes, and checks that every observer receives
// exactly the final log: each event once, in id order, byte for byte as
// read-events returns it, and nothing more.
func TestPostgresObserveOrder(t *testing.T) {
	cluster := startPostgres(t, 3)
	var observers []*observation
	for _, node := range cluster.Nodes() {
		observers = append(observers, observe(t, node, `{"subject":"/","options":{"recursive":true}}`))
	}
	acked := map[string]string{}
	ws := startWriters(12, "/order", func() string { return cluster.URL("http") }, acked)
	time.Sleep(3 * time.Second)
	ws.stop()
	if len(ws.failures) > 0 {
		t.Fatalf("writes failed: %v", ws.failures)
	}
	if total := checkStore(t, cluster, acked); total != len(acked) {
		t.Fatalf("%d events stored, %d acknowledged", total, len(acked))
	}
	log := stream(t, cluster, "/api/v1/read-events", `{"subject":"/","options":{"recursive":true}}`)
	for i, o := range observers {
		got := o.events(t, len(log), 30*time.Second)
		for j, e := range got {
			if string(e.raw) != string(log[j].Payload) {
				t.Fatalf("observer on node %d: event %d is %s, the log has %s", i, j, e.raw, log[j].Payload)
			}
		}
		o.quiet(t, 300*time.Millisecond)
	}
	t.Logf("%d events written on 3 nodes, received in order by an observer on each", len(log))
}
