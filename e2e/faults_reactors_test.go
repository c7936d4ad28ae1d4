package e2e

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// The exactly-once reactors of the fault suite: a writer places orders
// /orders/<n> (recorded in the history like every write), and a worker on
// each node answers every order of the subscription "invoicing" with one
// invoice /invoices/<n>, written together with the acknowledgement of its
// delivery and without a precondition (parking is left out of it: up to
// 1,000 deliveries each). Faults move the partitions between
// the nodes (leases lost, nodes killed, the database gone); at the end every
// stored order has exactly one invoice and no invoice lacks its order.

// startReactors creates the subscription and starts the order writer and
// the workers, each worker on its node as that node runs now.
func (s *faultSuite) startReactors() {
	if r := s.Do("POST", "/api/v1/create-subscription", harness.Token,
		`{"subscription":"invoicing","subject":"/orders","options":{"recursive":true,"partitions":8,"maxInFlight":20,"acknowledgeTimeout":"2s","maxDeliveries":1000}}`); r.StatusCode != 200 {
		s.t.Fatalf("create the subscription of the reactors: %d %s", r.StatusCode, r.Body)
	}
	s.reactorServers = make([]*server, len(s.Nodes()))
	for i, node := range s.Nodes() {
		s.reactorServers[i] = &server{url: node.URL("http")}
	}
	s.reactors = startReactors(s.reactorServers, s.rng.Uint64())
	s.startWriter(func(n int) (string, string, int) {
		return fmt.Sprintf("order/%d", n), fmt.Sprintf("/orders/%d", n), 1
	})
}

// replaced points node i's worker at the node started in its place.
func (s *faultSuite) replaced(i int) {
	if s.reactorServers != nil {
		s.reactorServers[i].set(s.node(i).URL("http"))
	}
}

// checkReactors waits until the workers settled every order, stops them
// and checks that each stored order has exactly one invoice, and each
// invoice its order; it returns the number of orders.
func (s *faultSuite) checkReactors() int {
	t := s.t
	t.Helper()
	waitSettled(t, s, "invoicing")
	s.reactors.stop()
	subjects := func(base string) map[string]int {
		out := map[string]int{}
		for _, l := range stream(t, s, "/api/v1/read-events", fmt.Sprintf(`{"subject":%q,"options":{"recursive":true}}`, base)) {
			var e struct {
				Subject string `json:"subject"`
			}
			if err := json.Unmarshal(l.Payload, &e); err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(e.Subject, base+"/")]++
		}
		return out
	}
	orders, invoices := subjects("/orders"), subjects("/invoices")
	var problems []string
	for n := range orders {
		if invoices[n] != 1 {
			problems = append(problems, fmt.Sprintf("order %s has %d invoices", n, invoices[n]))
		}
	}
	for n := range invoices {
		if orders[n] == 0 {
			problems = append(problems, fmt.Sprintf("invoice %s has no order", n))
		}
	}
	t.Logf("reactors: %d orders stored, %d invoices written, %d reactions refused as stale", len(orders), s.reactors.written.Load(), s.reactors.refused.Load())
	for i, p := range problems {
		if i == 20 {
			t.Errorf("and %d more anomalies of the reactors", len(problems)-20)
			break
		}
		t.Errorf("anomaly (reactors): %s", p)
	}
	return len(orders)
}
