package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// leaseFlag shortens the subscription leases of the PostgreSQL-mode tests.
const leaseFlag = "--subscription-lease-timeout=3s"

// TestSubscriptionsAcrossNodes consumes a subscription of four partitions
// with a consumer on each of two of three PostgreSQL-mode nodes: the
// partitions spread over both, every event comes once, acknowledgements
// sent to any node count, read-subscription answers the same on every
// node, and a consumer replaced on another node ends with its error line.
func TestSubscriptionsAcrossNodes(t *testing.T) {
	nodes := startPostgres3(t, leaseFlag).(*harness.Cluster)
	n := nodes.Nodes()
	var body []string
	for i := range 40 {
		body = append(body, fmt.Sprintf("/orders/%d", i%8), "io.example.placed")
	}
	if r := n[0].Do("POST", "/api/v1/create-subscription", harness.Token,
		`{"subscription":"billing","subject":"/orders","options":{"recursive":true,"partitions":4}}`); r.StatusCode != 200 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	w1 := consume(t, n[1], "billing", "w1")
	w2 := consume(t, n[2], "billing", "w2") // node 2 learns of the subscription from the database
	deadline := time.Now().Add(10 * time.Second)
	for !spreadEvenly(t, n[0], "billing", 2) {
		if time.Now().After(deadline) {
			t.Fatalf("the partitions did not spread over both consumers: %v", subscriptionOf(t, n[0], "billing"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	mustWrite(t, n[0], candidates(body...))
	seen := map[string]string{}
	var tokens []string
	for len(seen) < 40 {
		for _, w := range []struct {
			name string
			c    *consumer
		}{{"w1", w1}, {"w2", w2}} {
			select {
			case l, ok := <-w.c.lines:
				if !ok {
					t.Fatalf("the stream of %s ended", w.name)
				}
				if l.Type != "delivery" {
					continue
				}
				var d delivery
				var e streamedEvent
				if err := json.Unmarshal(l.Payload, &d); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(d.Event, &e); err != nil {
					t.Fatal(err)
				}
				if prev, ok := seen[e.ID]; ok {
					t.Fatalf("event %s delivered to %s and to %s", e.ID, prev, w.name)
				}
				seen[e.ID] = w.name
				tokens = append(tokens, d.Delivery)
			case <-time.After(20 * time.Second):
				t.Fatalf("%d of 40 events delivered", len(seen))
			}
		}
	}
	owners := map[string]bool{}
	for _, w := range seen {
		owners[w] = true
	}
	if len(owners) != 2 {
		t.Fatalf("the events went to %v: the partitions did not spread over both nodes", owners)
	}
	for i, tok := range tokens { // to every node in turn
		r := n[i%3].Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, fmt.Sprintf(`{"subscription":"billing","deliveries":[%q]}`, tok))
		if r.StatusCode != 200 || !strings.Contains(string(r.Body), `"acknowledged":1`) {
			t.Fatalf("acknowledge on node %d: %d %s", i%3, r.StatusCode, r.Body)
		}
	}
	for _, node := range n {
		info := subscriptionOf(t, node, "billing")
		if info["lag"] != float64(0) || info["inFlight"] != float64(0) || len(info["consumers"].([]any)) != 2 {
			t.Fatalf("read-subscription on %s: %v", node.URL("http"), info)
		}
		for _, p := range info["partitions"].([]any) {
			if pos := p.(map[string]any)["position"]; pos != "39" && pos != "38" && pos != "37" && pos != "36" {
				t.Fatalf("a partition's position after every acknowledgement: %v", p)
			}
		}
	}
	// w1 starts again on node 0: the stream on node 1 ends as replaced.
	consume(t, n[0], "billing", "w1")
	ended := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-w1.lines:
			if !ok {
				t.Fatal("the replaced stream ended without an error line")
			}
			if l.Type == "error" {
				if !strings.Contains(string(l.Payload), "consumer replaced") {
					t.Fatalf("the replaced stream's error: %s", l.Payload)
				}
				return
			}
		case <-ended:
			t.Fatal("the stream of the replaced consumer goes on")
		}
	}
}

// spreadEvenly reports whether the subscription name has consumers
// connected, each with share partitions.
func spreadEvenly(t *testing.T, target harness.Target, name string, share int) bool {
	t.Helper()
	info := subscriptionOf(t, target, name)
	cs := info["consumers"].([]any)
	for _, c := range cs {
		if parts, _ := c.(map[string]any)["partitions"].([]any); len(parts) != share {
			return false
		}
	}
	return len(cs) > 0
}

// TestExactlyOnceReactionsAcrossNodes is TestExactlyOnceReactions on three
// PostgreSQL-mode nodes, a worker on each: node 1 is killed with SIGKILL
// and started again twice while they work, so that its partitions pass to
// the others when its leases expire; at the end there is exactly one
// invoice per order.
func TestExactlyOnceReactionsAcrossNodes(t *testing.T) {
	nodes := startPostgres3(t, leaseFlag).(*harness.Cluster)
	reactAcrossNodes(t, nodes, 3000, func(servers []*server, rs *reactors) {
		for kill := range 2 {
			killInTheMiddle(t, kill, rs, 3000)
			victim := nodes.Nodes()[1]
			victim.Signal(syscall.SIGKILL)
			victim.Wait(10 * time.Second)
			servers[1].set(nodes.Replace(1).URL("http"))
		}
	})
}

// TestExactlyOnceReactionsAcrossFailover has the workers of
// TestExactlyOnceReactionsAcrossNodes react while the primary database
// stops at once and its synchronous standby is promoted: at the end there
// is exactly one invoice per order.
func TestExactlyOnceReactionsAcrossFailover(t *testing.T) {
	primary, standby, url := startFailoverPair(t)
	nodes := harness.StartCluster(t, bin, 3, harness.Postgres(url, leaseFlag)...)
	reactAcrossNodes(t, nodes, 3000, func(_ []*server, rs *reactors) {
		time.Sleep(1500 * time.Millisecond)
		t.Logf("failover with %d invoices written", rs.written.Load())
		if err := primary.Stop(pgtest.Immediate); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if err := standby.Promote(); err != nil {
			t.Fatal(err)
		}
	})
}

// reactAcrossNodes has a worker on each node answer orders (prepareInvoicing)
// while disrupt does its harm; then it checks that each order has exactly
// one invoice.
func reactAcrossNodes(t *testing.T, nodes *harness.Cluster, orders int, disrupt func(servers []*server, rs *reactors)) {
	t.Helper()
	prepareInvoicing(t, nodes, orders)
	servers := make([]*server, len(nodes.Nodes()))
	for i, node := range nodes.Nodes() {
		servers[i] = &server{url: node.URL("http")}
	}
	rs := startReactors(servers, 11)
	defer rs.stop()
	disrupt(servers, rs)
	waitSettled(t, nodes, "invoicing")
	rs.stop()
	checkOneInvoiceEach(t, nodes, orders, rs)
}

// TestSubscriptionsSurviveKillsAcrossNodes is TestSubscriptionsSurviveKills
// on three PostgreSQL-mode nodes: the consumers on nodes 0 and 1 send their
// acknowledgements to the next node, the writer writes through node 2, and
// nodes 0 and 1 are killed with SIGKILL in turn, four times.
func TestSubscriptionsSurviveKillsAcrossNodes(t *testing.T) {
	nodes := startPostgres3(t, leaseFlag).(*harness.Cluster)
	servers := make([]*server, 3)
	for i, node := range nodes.Nodes() {
		servers[i] = &server{url: node.URL("http")}
	}
	ackUnderKills(t, nodes, servers[2], servers[:2], servers[1:], 4, func(round int) {
		time.Sleep(1500 * time.Millisecond)
		victim := round % 2
		nodes.Nodes()[victim].Signal(syscall.SIGKILL)
		nodes.Nodes()[victim].Wait(10 * time.Second)
		servers[victim].set(nodes.Replace(victim).URL("http"))
	})
}
